/**
 * A new SQLite database is written whole (src/db/new-sqlite-file.ts): the same tables, indexes
 * and header as SQLite's own creation makes, in WAL mode, with nothing left beside it; a path
 * that exists is never written over.
 */
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SqliteDb } from "../../src/db/index.ts";
import { writeNewDatabase } from "../../src/db/new-sqlite-file.ts";
import { tempDir } from "../helpers.ts";

/** What a database file is made of, read by a plain connection after the SmithersDb that made it closed. */
function describeFile(path: string) {
  const sqlite = new Database(path, { readonly: true });
  try {
    const pragma = (name: string) => Object.values(sqlite.query<Record<string, unknown>, []>(`PRAGMA ${name}`).get() ?? {})[0];
    return {
      schema: sqlite.query("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name").all(),
      journalMode: pragma("journal_mode"),
      applicationId: pragma("application_id"),
      userVersion: pragma("user_version"),
      pageSize: pragma("page_size"),
      integrity: pragma("integrity_check"),
    };
  } finally {
    sqlite.close();
  }
}

describe("a new SQLite database", () => {
  test("has the tables, indexes and header that SQLite's own creation of the same database makes, in WAL mode", async () => {
    const dir = tempDir();
    const written = join(dir, "written.db");
    // An empty file exists, so it is not written whole: SQLite creates its tables as it always did.
    const byDdl = join(dir, "by-ddl.db");
    writeFileSync(byDdl, "");
    for (const path of [written, byDdl]) await new SqliteDb(path).close();
    const a = describeFile(written);
    expect(a.schema.length).toBeGreaterThan(20);
    expect(a).toEqual(describeFile(byDdl));
    expect([a.journalMode, a.integrity]).toEqual(["wal", "ok"]);
  });

  test("leaves nothing beside the database but SQLite's own files", async () => {
    const dir = tempDir();
    const db = new SqliteDb(join(dir, "smithers.db"));
    expect(readdirSync(dir).sort()).toEqual(["smithers.db", "smithers.db-shm", "smithers.db-wal"]);
    await db.close();
  });

  test("is not written over a file that appeared at its path first", () => {
    const dir = tempDir();
    const path = join(dir, "taken.db");
    writeFileSync(path, "someone else's bytes");
    expect(writeNewDatabase(path)).toBe(false);
    expect(readFileSync(path, "utf8")).toBe("someone else's bytes");
    expect(readdirSync(dir)).toEqual(["taken.db"]);
  });
});
