/**
 * The Sql executor over one bun:sqlite connection: each text prepared once, then reused.
 *
 * Inside a write transaction it also combines rows (see combined-rows.ts): rows of a text marked
 * `combinable` are held and written many per statement just before any other statement of the
 * connection runs (a read, another write, Drizzle through `orm`), and before COMMIT.
 */
import type { Database, SQLQueryBindings, Statement } from "bun:sqlite";
import { HeldRows } from "./combined-rows.ts";
import type { Orm, Sql } from "./sql.ts";

export class SqliteSql implements Sql {
  readonly dialect = "sqlite" as const;
  private readonly statements = new Map<string, Statement>();
  private readonly held = new HeldRows();

  /** `drizzle`: the connection's bun-sqlite Drizzle (made on first use), which answers synchronously (awaiting it is free). */
  constructor(
    readonly sqlite: Database,
    private readonly drizzle: () => Orm,
  ) {}

  /** Drizzle on this connection; rows held are written first. */
  get orm(): Orm {
    this.flush();
    return this.drizzle();
  }

  /** The prepared statement for `text` (prepared on first use). */
  statement(text: string): Statement {
    let found = this.statements.get(text);
    if (found === undefined) this.statements.set(text, (found = this.sqlite.prepare(text)));
    return found;
  }

  /** From now until `endCombining` (or `discardCombined`), rows of combinable texts are held. */
  beginCombining(): void {
    this.held.start();
  }

  /** Writes the rows held and stops holding (before COMMIT). */
  endCombining(): void {
    try {
      this.flush();
    } finally {
      this.held.stop();
    }
  }

  /** Forgets the rows held and stops holding (the transaction rolls back). */
  discardCombined(): void {
    this.held.discard();
  }

  /** Writes the rows held, many per statement. */
  private flush(): void {
    if (this.held.isEmpty) return;
    for (const [text, params] of this.held.take()) this.statement(text).run(...(params as SQLQueryBindings[]));
  }

  all<T>(text: string, ...params: unknown[]): Promise<T[]> {
    try {
      this.flush();
      return Promise.resolve(this.statement(text).all(...(params as SQLQueryBindings[])) as T[]);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  get<T>(text: string, ...params: unknown[]): Promise<T | undefined> {
    try {
      this.flush();
      return Promise.resolve((this.statement(text).get(...(params as SQLQueryBindings[])) as T | null) ?? undefined);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Runs a statement; a combinable one while combining is held and resolves with 1 (its one row). */
  run(text: string, ...params: unknown[]): Promise<number> {
    try {
      if (this.held.hold(text, params)) return Promise.resolve(1);
      this.flush();
      return Promise.resolve(this.statement(text).run(...(params as SQLQueryBindings[])).changes);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  exec(text: string): Promise<void> {
    try {
      this.flush();
      this.sqlite.exec(text);
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }
}
