/** The Sql executor over one bun:sqlite connection: each text prepared once, then reused. */
import type { Database, SQLQueryBindings, Statement } from "bun:sqlite";
import type { Orm, Sql } from "./sql.ts";

export class SqliteSql implements Sql {
  readonly dialect = "sqlite" as const;
  private readonly statements = new Map<string, Statement>();

  /** `orm`: the connection's bun-sqlite Drizzle, which answers synchronously (awaiting it is free). */
  constructor(
    readonly sqlite: Database,
    readonly orm: Orm,
  ) {}

  /** The prepared statement for `text` (prepared on first use). */
  statement(text: string): Statement {
    let found = this.statements.get(text);
    if (found === undefined) this.statements.set(text, (found = this.sqlite.prepare(text)));
    return found;
  }

  all<T>(text: string, ...params: unknown[]): Promise<T[]> {
    try {
      return Promise.resolve(this.statement(text).all(...(params as SQLQueryBindings[])) as T[]);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  get<T>(text: string, ...params: unknown[]): Promise<T | undefined> {
    try {
      return Promise.resolve((this.statement(text).get(...(params as SQLQueryBindings[])) as T | null) ?? undefined);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  run(text: string, ...params: unknown[]): Promise<number> {
    try {
      return Promise.resolve(this.statement(text).run(...(params as SQLQueryBindings[])).changes);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  exec(text: string): Promise<void> {
    try {
      this.sqlite.exec(text);
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }
}
