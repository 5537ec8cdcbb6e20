/**
 * Drizzle over a bun:sqlite connection, in a module of its own so SqliteDb can load it on first use
 * (a run's statements are plain SQL; Drizzle's session and relational helpers cost some ms of a
 * cold start). SqliteDb requires this file, not the package: a `require` of drizzle-orm resolves
 * its CommonJS build, a second Drizzle beside the one every other module imports.
 */
import type { Database } from "bun:sqlite";
import { drizzle, type BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";

export type Drizzle = BunSQLiteDatabase<Record<string, never>> & { $client: Database };

export function sqliteDrizzle(client: Database): Drizzle {
  return drizzle({ client }) as Drizzle;
}
