/** Small helpers every adapter shares: joining an open transaction and null-safe equality. */
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
