/** Opening a Smithers database: a file path (or ":memory:") is SQLite, a postgres:// URL is PostgreSQL. */
import { resolve } from "node:path";
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
 * The connections openSmithersDb handed out, by databaseKey. A second connection to the same
 * SQLite file inside one process has its own write queue: its writes wait on the first one's lock
 * with the event loop stopped (SQLite's busy handler sleeps), which stalls the very process that
 * holds the lock. So every opener in a process (the server, a worker, each workflow's runs) gets
 * the one connection, counted by retain() and closed with its last holder.
 */
const openDatabases = new Map<string, Store>();

/** What identifies a database across openers: the absolute file path, or the URL; undefined for ":memory:" (each is its own). */
export function databaseKey(target: string): string | undefined {
  if (isPostgresUrl(target)) return target;
  return target === ":memory:" || target === "" ? undefined : resolve(target);
}

/**
 * Opens (creating if needed) a Smithers database: SQLite with WAL, busy timeout and foreign keys
 * for a path, PostgreSQL for a URL. A database this process already has open is handed out
 * again (one connection per database per process; each caller closes it once). A busy timeout,
 * retry policy or `{ shared: false }` gives a connection of one's own, with exactly those
 * settings, and so does a durability other than the open connection's.
 * @example const db = openSmithersDb(process.env.SMITHERS_DATABASE_URL ?? "smithers.db");
 */
export function openSmithersDb(target: string, options: SmithersDbOptions & { shared?: boolean } = {}): SmithersDb {
  const { shared = true, durability, ...rest } = options;
  const own = !shared || Object.values(rest).some((v) => v !== undefined);
  const key = own ? undefined : databaseKey(target);
  if (key === undefined) return connect(target, options);
  const open = openDatabases.get(key);
  if (open && !open.isClosed) {
    // Another mode than the open connection's would change every holder's commits: its own connection.
    return durability === undefined || durability === open.durability ? open.retain() : connect(target, options);
  }
  const db = connect(target, durability === undefined ? {} : { durability });
  openDatabases.set(key, db);
  return db;
}

/** The connection this process has open to `target` (openSmithersDb's), retained for the caller; undefined when none is. */
export function adoptOpenDb(target: string): SmithersDb | undefined {
  const key = databaseKey(target);
  const open = key === undefined ? undefined : openDatabases.get(key);
  return open && !open.isClosed ? open.retain() : undefined;
}

function connect(target: string, options: SmithersDbOptions & { shared?: boolean }): SmithersDb {
  const { shared: _, ...settings } = options;
  if (!isPostgresUrl(target)) return new SqliteDb(target, settings);
  // Loaded on first use: the driver and pg-core cost a SQLite-only process ~60 ms of start-up.
  const { PgDb } = require("./pg/pg-db.ts") as typeof import("./pg/pg-db.ts");
  return new PgDb(target, settings);
}

/**
 * Waits for the first answer of `db` (its table set-up), so a PostgreSQL server that is down or
 * refuses the login is DB_UNREACHABLE before a server listens or a worker starts polling; on that
 * failure the connection is closed.
 */
export async function firstContact(db: SmithersDb): Promise<void> {
  try {
    await db.read("firstContact", (q) => q.get("SELECT 1"));
  } catch (error) {
    await db.close().catch(() => undefined);
    throw error;
  }
}
