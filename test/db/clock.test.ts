/** The database's clock (runs.databaseNow), on SQLite the same system clock as Date.now(): never behind a time taken before it. */
import { expect, test } from "bun:test";
import { openSmithersDb, runs } from "../../src/db/index.ts";
import { tempDbPath } from "../helpers.ts";

test("over 2,000 reads, the database's clock is never behind Date.now() taken just before (a decision stamped now is due at once)", async () => {
  const db = openSmithersDb(tempDbPath());
  try {
    const behind: number[] = [];
    for (let i = 0; i < 2_000; i++) {
      const before = Date.now();
      const now = await runs.databaseNow(db);
      if (now < before) behind.push(before - now);
    }
    expect(behind).toEqual([]);
  } finally {
    await db.close();
  }
});
