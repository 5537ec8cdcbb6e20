/** Opening a Smithers database: a file path (or ":memory:") is SQLite, a postgres:// URL is PostgreSQL. */
import { SqliteDb } from "./smithers-db.ts";
import type { SmithersDb as Store, SmithersDbOptions } from "./store.ts";

/**
 * The storage interface (store.ts) as a type; as a value, the SQLite implementation, so
 * `new SmithersDb(path)` keeps opening a SQLite file.
 */
export type SmithersDb = Store;
export const SmithersDb = SqliteDb;

/** A `postgres://` or `postgresql://` URL. */
export function isPostgresUrl(target: string): boolean {
  return /^postgres(?:ql)?:\/\//i.test(target);
}

/**
 * Opens (creating if needed) a Smithers database: SQLite with WAL, busy timeout and foreign keys
 * for a path, PostgreSQL for a URL.
 * @example const db = openSmithersDb(process.env.SMITHERS_DATABASE_URL ?? "smithers.db");
 */
export function openSmithersDb(target: string, options?: SmithersDbOptions): SmithersDb {
  if (!isPostgresUrl(target)) return new SqliteDb(target, options);
  // Loaded on first use: the driver and pg-core cost a SQLite-only process ~60 ms of start-up.
  const { PgDb } = require("./pg/pg-db.ts") as typeof import("./pg/pg-db.ts");
  return new PgDb(target, options);
}
