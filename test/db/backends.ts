/**
 * Storage conformance: adapter tests run once per backend (an in-memory database and a WAL
 * file on disk) so behaviour never depends on where the bytes live.
 */
import { afterEach, beforeEach, describe } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SqliteDb, type SmithersDbOptions } from "../../src/db/index.ts";

export type Backend = { name: string; path: () => string };

const tempDirs: string[] = [];

export function tempDbPath(): string {
  const dir = mkdtempSync(join(tmpdir(), "smithers-db-"));
  tempDirs.push(dir);
  return join(dir, "smithers.db");
}

export function removeTempDirs(): void {
  for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

export const BACKENDS: readonly Backend[] = [
  { name: "memory", path: () => ":memory:" },
  { name: "wal-file", path: tempDbPath },
];

/** Runs `body` once per backend; `db()` is a fresh database for each test. */
export function forEachBackend(body: (db: () => SqliteDb, backend: Backend) => void, options?: SmithersDbOptions): void {
  for (const backend of BACKENDS) {
    describe(`[${backend.name}]`, () => {
      let current: SqliteDb | undefined;
      beforeEach(() => {
        current = new SqliteDb(backend.path(), options);
      });
      afterEach(async () => {
        await current?.close();
        current = undefined;
        removeTempDirs();
      });
      body(() => {
        if (!current) throw new Error("database used outside a test");
        return current;
      }, backend);
    });
  }
}
