/** Small helpers every adapter shares: joining an open transaction and null-safe equality. */
import type { Statement } from "bun:sqlite";
import { getTableColumns, getTableName, sql, type SQL } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import { SmithersError } from "../../errors/index.ts";
import { quoteIdentifier } from "../ddl.ts";
import type { Drizzle, SmithersDb } from "../smithers-db.ts";

/**
 * Runs `fn` under BEGIN IMMEDIATE. When the caller already owns an open transaction (which is
 * itself BEGIN IMMEDIATE) the work joins it instead of failing as a nested transaction, so an
 * adapter call made inside `withTransaction` commits or rolls back with the surrounding work.
 */
export function immediate<T>(db: SmithersDb, label: string, fn: (d: Drizzle) => T): Promise<T> {
  return db.inTransaction() ? db.write(label, fn) : db.withTransaction(label, fn);
}

/** `column IS value`: equality that also matches NULL to NULL. */
export function isSame(column: SQLiteColumn, value: unknown): SQL {
  return sql`${column} IS ${value ?? null}`;
}

/** Parses a JSON column, keeping NULL as null. */
export function fromJson(text: string | null): unknown {
  return text === null ? null : JSON.parse(text);
}

const statementCache = new WeakMap<Drizzle, Map<string, unknown>>();

/**
 * A statement built once per connection and reused: the hot paths (node states, attempts,
 * frames, output rows) run thousands of times per run, and building SQL each time costs more
 * than SQLite spends executing it.
 */
export function cachedStatement<T>(d: Drizzle, key: string, build: () => T): T {
  let byKey = statementCache.get(d);
  if (!byKey) statementCache.set(d, (byKey = new Map()));
  let found = byKey.get(key) as T | undefined;
  if (found === undefined) byKey.set(key, (found = build()));
  return found;
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
  for (const [key, column] of Object.entries(getTableColumns(table))) names[key] = quoteIdentifier(column.name);
  return names as SqlNames<T>;
}

/** `INSERT INTO table (columns of keys…) VALUES (?, …)`, one positional placeholder per key, in order. */
export function insertSql<T extends SQLiteTable>(table: T, keys: readonly ColumnKey<T>[]): string {
  const columns = getTableColumns(table) as Record<string, SQLiteColumn>;
  const names = keys.map((key) => {
    const column = columns[key];
    if (!column) throw new SmithersError("INVALID_INPUT", `${getTableName(table)} has no field "${key}"`, { field: key });
    return quoteIdentifier(column.name);
  });
  return `INSERT INTO ${quoteIdentifier(getTableName(table))} (${names.join(", ")}) VALUES (${names.map(() => "?").join(", ")})`;
}

/**
 * A plain bun:sqlite statement for `sqlText`, prepared once per connection. The per-task writes
 * use these: a Drizzle-built statement costs a fresh process ~1-3 ms to build the first time
 * and about twice as much per call, which is most of a short run's cost. Positional `?` only;
 * build `sqlText` with `sqlNames` / `insertSql`, never with hand-written table or column names.
 */
export function rawStatement(d: Drizzle, sqlText: string): Statement {
  return cachedStatement(d, sqlText, () => d.$client.prepare(sqlText));
}
