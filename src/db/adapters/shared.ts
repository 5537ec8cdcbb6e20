/** Small helpers every adapter shares: joining an open transaction and null-safe equality. */
import { eq, sql, type SQL } from "drizzle-orm/sql";
import { getTableName } from "drizzle-orm/table";
import { getTableColumns } from "drizzle-orm/utils";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import { SmithersError } from "../../errors/index.ts";
import { quoteIdentifier } from "../ddl.ts";
import { definedColumnNames } from "../lazy-table.ts";
import { nullSafeEq, type Dialect, type Sql } from "../sql.ts";
import { chunkParams, chunkSize, multiRowText } from "../combined-rows.ts";
export { combinable } from "../combined-rows.ts";
import type { SmithersDb } from "../store.ts";

/**
 * Runs `fn` under BEGIN IMMEDIATE. When the caller already owns an open transaction (which is
 * itself BEGIN IMMEDIATE) the work joins it instead of failing as a nested transaction, so an
 * adapter call made inside `withTransaction` commits or rolls back with the surrounding work.
 */
export function immediate<T>(db: SmithersDb, label: string, fn: (q: Sql) => T | Promise<T>): Promise<T> {
  return db.inTransaction() ? db.write(label, fn) : db.withTransaction(label, fn);
}

/** Rows changed by a Drizzle `.run()`: a `{ changes }` object on both backends. */
export function changedRows(result: unknown): number {
  return (result as { changes?: number } | undefined)?.changes ?? 0;
}

/** Parses a JSON column, keeping NULL as null. */
export function fromJson(text: string | null): unknown {
  return text === null ? null : JSON.parse(text);
}

/** A Drizzle table's field keys (the TypeScript names of its columns). */
export type ColumnKey<T extends SQLiteTable> = Extract<keyof T["_"]["columns"], string>;

/** The quoted SQL name of a table (`$table`) and of each of its columns, by field key. */
export type SqlNames<T extends SQLiteTable> = { readonly [K in ColumnKey<T>]: string } & { readonly $table: string };

/**
 * SQL names taken from the table object, for statement texts built once at module load: renaming
 * a field in internal-schema.ts makes every text that uses it a type error, and renaming a
 * column's SQL name changes the texts with it.
 * @example const A = sqlNames(smithersAttempts); const text = `SELECT ${A.state} FROM ${A.$table} WHERE ${A.runId} = ?`;
 */
export function sqlNames<T extends SQLiteTable>(table: T): SqlNames<T> {
  const names: Record<string, string> = { $table: quoteIdentifier(getTableName(table)) };
  // An internal table's names come from its column definitions: reading them does not build its columns.
  const columns = definedColumnNames(table) ?? Object.fromEntries(Object.entries(getTableColumns(table)).map(([key, column]) => [key, column.name]));
  for (const [key, name] of Object.entries(columns)) names[key] = quoteIdentifier(name);
  return names as SqlNames<T>;
}

/** `INSERT INTO table (columns of keys…) VALUES (?, …)`, one positional placeholder per key, in order. */
export function insertSql<T extends SQLiteTable>(table: T, keys: readonly ColumnKey<T>[]): string {
  const known = sqlNames(table) as Record<string, string>;
  const names = keys.map((key) => {
    if (key === "$table" || !Object.hasOwn(known, key))
      throw new SmithersError("INVALID_INPUT", `${getTableName(table)} has no field "${key}"`, { field: key });
    return known[key]!;
  });
  return `INSERT INTO ${known.$table} (${names.join(", ")}) VALUES (${names.map(() => "?").join(", ")})`;
}

/**
 * Runs the insertSql text (one row of placeholders) for every row given (each the row's
 * parameters in order), many rows per statement: a batch of steps writes its frames and events
 * in a few statements instead of one per row.
 */
export async function insertRows(q: Sql, insert: string, rows: readonly (readonly unknown[])[]): Promise<void> {
  for (let at = 0; at < rows.length; ) {
    const count = chunkSize(rows.length - at);
    await q.run(multiRowText(insert, count), ...chunkParams(rows, at, count));
    at += count;
  }
}

/** The advisory-lock key space of each per-run sequence (PostgreSQL's two-integer lock key). */
const SEQUENCE_LOCK_SPACE = { events: 1, signals: 2, queue: 3, toolCalls: 4, limits: 5 } as const;

/**
 * Serialises the writers of one run's sequence (event or signal seq) until the transaction ends.
 * SQLite needs nothing: BEGIN IMMEDIATE already holds the database's one write lock. PostgreSQL
 * takes a transaction-scoped advisory lock on (sequence, hash of run id); under READ COMMITTED the
 * MAX(seq) read after it sees every seq committed by the writer before, so seqs stay gap-free
 * and unique however many processes write.
 */
export async function lockRunSequence(q: Sql, sequence: keyof typeof SEQUENCE_LOCK_SPACE, runId: string): Promise<void> {
  if (q.dialect === "postgres") await q.get("SELECT pg_advisory_xact_lock(?::int, hashtext(?))", SEQUENCE_LOCK_SPACE[sequence], runId);
}

/** The channel workers LISTEN on (PostgreSQL): a run was queued or a waiting run became due. */
export const WORK_CHANNEL = "smithers_work";

/**
 * Tells idle workers there is work, delivered when the caller's transaction commits (pg_notify);
 * nothing on SQLite, where workers poll.
 */
export async function notifyWorkers(q: Sql): Promise<void> {
  if (q.dialect === "postgres") await q.get("SELECT pg_notify(?, '')", WORK_CHANNEL);
}

/** `column IS value` (SQLite) / `IS NOT DISTINCT FROM` (PostgreSQL): equality that also matches NULL to NULL. */
export function isSame(dialect: Dialect, column: SQLiteColumn, value: unknown): SQL {
  return sql`${column} ${sql.raw(nullSafeEq(dialect))} ${value ?? null}`;
}

/**
 * `column = value` for a claim's UPDATE, where PostgreSQL skips the row while another transaction
 * holds it locked (FOR UPDATE SKIP LOCKED): the claim fails at once instead of waiting (on a
 * process cut off from the database mid-transaction, perhaps) and is tried again on a later pass.
 * SQLite's write lock leaves no row locked by anyone else.
 */
export function unlockedRow(dialect: Dialect, column: SQLiteColumn, value: string): SQL {
  if (dialect !== "postgres") return eq(column, value);
  const name = sql.raw(quoteIdentifier(column.name));
  return sql`${column} = (SELECT ${name} FROM ${sql.raw(quoteIdentifier(getTableName(column.table)))} WHERE ${name} = ${value} FOR UPDATE SKIP LOCKED)`;
}
