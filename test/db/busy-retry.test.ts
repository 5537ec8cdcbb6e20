/**
 * Forces SQLITE_BUSY with a second connection holding BEGIN IMMEDIATE on the same WAL file.
 * SmithersDb runs with busy_timeout 0 so every attempt fails at once and only the retry policy
 * (6 retries, 50 ms doubling: about 3.2 s in all) decides the outcome.
 */
import { Database } from "bun:sqlite";
import { afterEach, describe, expect, test } from "bun:test";
import { insertEvent, listEventHistory } from "../../src/db/adapters/events.ts";
import { DB_RETRY_POLICY, dbRetryCount, SmithersDb } from "../../src/db/index.ts";
import { SmithersError } from "../../src/errors/index.ts";
import { removeTempDirs, tempDbPath } from "./backends.ts";

const event = { runId: "r1", timestampMs: 1, type: "RunStarted", payloadJson: "{}" };
const closers: (() => Promise<void>)[] = [];

function lockedDatabase(): { db: SmithersDb; locker: Database } {
  const path = tempDbPath();
  const db = new SmithersDb(path, { busyTimeoutMs: 0 });
  const locker = new Database(path);
  locker.exec("PRAGMA busy_timeout = 0");
  locker.exec("BEGIN IMMEDIATE");
  closers.push(async () => {
    if (locker.inTransaction) locker.exec("ROLLBACK");
    locker.close();
    await db.close();
  });
  return { db, locker };
}

afterEach(async () => {
  for (const close of closers.splice(0)) await close();
  removeTempDirs();
});

describe("withSqliteWriteRetry", () => {
  test("a write that stays busy is retried 6 times, each counted in smithers.db.retries, then fails with DB_WRITE_FAILED", async () => {
    const { db } = lockedDatabase();
    const before = dbRetryCount();
    let error: unknown;
    try {
      await insertEvent(db, event);
    } catch (e) {
      error = e;
    }
    expect(dbRetryCount() - before).toBe(DB_RETRY_POLICY.retries);
    expect(DB_RETRY_POLICY.retries).toBe(6);
    expect(SmithersError.is(error, "DB_WRITE_FAILED")).toBe(true);
    const cause = (error as SmithersError).details.cause as { code?: string };
    expect(cause.code).toBe("SQLITE_BUSY");
    expect(db.inTransaction()).toBe(false);
  });

  test("a write blocked for about 120 ms succeeds after a few retries", async () => {
    const { db, locker } = lockedDatabase();
    const before = dbRetryCount();
    setTimeout(() => locker.exec("COMMIT"), 120);
    expect(await insertEvent(db, event)).toBe(0);
    const retries = dbRetryCount() - before;
    expect(retries).toBeGreaterThanOrEqual(1);
    expect(retries).toBeLessThan(DB_RETRY_POLICY.retries);
    expect((await listEventHistory(db, { runId: "r1" })).map((r) => r.type)).toEqual(["RunStarted"]);
  });
});
