import { Database } from "bun:sqlite";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A fresh database path in its own temp directory. */
export function tempDbPath(name = "smithers.db"): string {
  return join(mkdtempSync(join(tmpdir(), "smithers-test-")), name);
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
