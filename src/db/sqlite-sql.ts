/**
 * The Sql executor over one bun:sqlite connection: each text prepared once, then reused.
 *
 * Inside a write transaction it also combines rows: a statement text marked `combinable` (an
 * INSERT, or an INSERT … ON CONFLICT upsert, of one VALUES row of placeholders) is not run at
 * once; its rows are held and written many per statement just before any other statement of the
 * connection runs (a read, another write, Drizzle through `orm`), and before COMMIT. A step of
 * the engine that settles many tasks writes their attempt, output and node rows in a few
 * statements instead of one each, and nothing inside the transaction can tell: every statement
 * sees every row held before it. A row that breaks a constraint fails the statement that writes
 * it, later in the same transaction, which then rolls back as it would have.
 */
import type { Database, SQLQueryBindings, Statement } from "bun:sqlite";
import type { Orm, Sql } from "./sql.ts";

const COMBINABLE = new Set<string>();

/**
 * Marks an INSERT text (one `VALUES (?, …)` row, no RETURNING, its change count not needed) whose
 * rows a write transaction may combine (see SqliteSql). Returns the text.
 */
export function combinable(text: string): string {
  COMBINABLE.add(text);
  return text;
}

/** Row counts of multi-row statements, largest first: a few texts to prepare, however many rows. */
const ROW_CHUNKS = [64, 16, 4, 1];
const multiRowTexts = new Map<string, string>();

/** `text` (an INSERT with one `VALUES (…)` row of placeholders) with `count` rows of them. */
export function multiRowText(text: string, count: number): string {
  if (count === 1) return text;
  const key = `${count}\0${text}`;
  let found = multiRowTexts.get(key);
  if (found === undefined) {
    const open = text.indexOf(" VALUES (") + " VALUES ".length;
    const close = text.indexOf(")", open) + 1; // placeholders hold no parenthesis
    const row = text.slice(open, close);
    multiRowTexts.set(key, (found = text.slice(0, close) + `, ${row}`.repeat(count - 1) + text.slice(close)));
  }
  return found;
}

/** How many rows the next statement of `remaining` rows writes (one of ROW_CHUNKS). */
export function chunkSize(remaining: number): number {
  return ROW_CHUNKS.find((size) => size <= remaining)!;
}

/** The parameters of rows `at` .. `at + count - 1` (rows of one statement text: one width), in one array. */
export function chunkParams(rows: readonly (readonly unknown[])[], at: number, count: number): unknown[] {
  const width = rows[at]!.length;
  const params = new Array<unknown>(count * width);
  for (let r = 0; r < count; r++) {
    const row = rows[at + r]!;
    for (let c = 0; c < width; c++) params[r * width + c] = row[c];
  }
  return params;
}

export class SqliteSql implements Sql {
  readonly dialect = "sqlite" as const;
  private readonly statements = new Map<string, Statement>();
  private combining = false;
  /** Rows held while combining, by statement text (in the order each text was first held). */
  private readonly held = new Map<string, unknown[][]>();

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
    this.combining = true;
  }

  /** Writes the rows held and stops holding (before COMMIT). */
  endCombining(): void {
    try {
      this.flush();
    } finally {
      this.combining = false;
    }
  }

  /** Forgets the rows held and stops holding (the transaction rolls back). */
  discardCombined(): void {
    this.held.clear();
    this.combining = false;
  }

  /** Writes the rows held, many per statement. */
  private flush(): void {
    if (this.held.size === 0) return;
    const batches = [...this.held];
    this.held.clear();
    for (const [text, rows] of batches) {
      for (let at = 0; at < rows.length; ) {
        const count = chunkSize(rows.length - at);
        this.statement(multiRowText(text, count)).run(...(chunkParams(rows, at, count) as SQLQueryBindings[]));
        at += count;
      }
    }
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
      if (this.combining && COMBINABLE.has(text)) {
        let rows = this.held.get(text);
        if (rows === undefined) this.held.set(text, (rows = []));
        rows.push(params);
        return Promise.resolve(1);
      }
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
