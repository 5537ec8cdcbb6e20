/** Small helpers every adapter shares: joining an open transaction and null-safe equality. */
import type { Statement } from "bun:sqlite";
import { sql, type SQL } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
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

/**
 * A plain bun:sqlite statement for `sqlText`, prepared once per connection. The per-task writes
 * use these: a Drizzle-built statement costs a fresh process ~1-3 ms to build the first time
 * and about twice as much per call, which is most of a short run's cost. Positional `?` only.
 */
export function rawStatement(d: Drizzle, sqlText: string): Statement {
  return cachedStatement(d, sqlText, () => d.$client.prepare(sqlText));
}
