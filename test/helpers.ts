import { Database } from "bun:sqlite";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SqliteDb, type SmithersDb } from "../src/db/index.ts";

/** A fresh database path in its own temp directory. */
export function tempDbPath(name = "smithers.db"): string {
  return join(mkdtempSync(join(tmpdir(), "smithers-test-")), name);
}

/** The SQLite implementation behind `db`, for SQLite-only tests (raw connection, sync Drizzle); throws on another backend. */
export function sqliteOf(db: SmithersDb): SqliteDb {
  if (!(db instanceof SqliteDb)) throw new Error(`expected a SQLite database, got ${db.dialect} at ${db.path}`);
  return db;
}

/** Runs a read-only SQL query against a database file. */
export function sql<T = Record<string, unknown>>(dbPath: string, query: string, ...params: (string | number | null)[]): T[] {
  const db = new Database(dbPath, { readonly: true });
  try {
    return db.query(query).all(...params) as T[];
  } finally {
    db.close();
  }
}

export type Thrown = Error & { code?: unknown; details?: Record<string, unknown> };

/** The value `fn` throws; fails the test if it returns. */
export function errorOf<T = Thrown>(fn: () => unknown): T {
  try {
    fn();
  } catch (error) {
    return error as T;
  }
  throw new Error("expected a throw");
}

/** The value `promise` rejects with; fails the test if it resolves. */
export async function rejection<T = Thrown>(promise: Promise<unknown>): Promise<T> {
  try {
    await promise;
  } catch (error) {
    return error as T;
  }
  throw new Error("expected a rejection");
}

/** Resolves after `ms`, or at once when `signal` aborts: a task body that honours its stop. */
export function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

/** mulberry32: a small seeded generator, the same sequence for the same seed (kill schedules a failing test can replay). */
export function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Polls `check` every 20 ms until it holds; throws after `ms`. */
export async function waitFor(check: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await Bun.sleep(20);
  }
}
