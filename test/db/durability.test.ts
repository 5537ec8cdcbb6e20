/**
 * Durability modes: "process" commits with synchronous = NORMAL (1), "power" with FULL (2);
 * durableTransaction (side-effect intents) commits at FULL in both and then restores the mode.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { startToolCall } from "../../src/db/adapters/tool-calls.ts";
import { openSmithersDb, SmithersDb, smithersCron, type Durability, type SqliteDb } from "../../src/db/index.ts";
import { SmithersError } from "../../src/errors/index.ts";
import { errorOf, rejection } from "../helpers.ts";
import { removeTempDirs, tempDbPath } from "./backends.ts";

const opened: SqliteDb[] = [];
afterEach(async () => {
  for (const db of opened.splice(0)) await db.close();
  removeTempDirs();
});

function open(durability?: Durability): SqliteDb {
  const db = new SmithersDb(tempDbPath(), durability === undefined ? {} : { durability });
  opened.push(db);
  return db;
}

const level = (db: SqliteDb) => (db.sqlite.query("PRAGMA synchronous").get() as { synchronous: number }).synchronous;
const cron = { cronId: "c", pattern: "* * * * *", workflowPath: "wf.tsx", createdAtMs: 1 };
const intent = { runId: "r1", nodeId: "pay", attempt: 1, toolName: "stripe", startedAtMs: 1 };

describe("durability", () => {
  test("the default is process (synchronous NORMAL = 1); power is FULL = 2", () => {
    expect([open().durability, level(open())]).toEqual(["process", 1]);
    expect([open("process").durability, level(open("process"))]).toEqual(["process", 1]);
    expect([open("power").durability, level(open("power"))]).toEqual(["power", 2]);
  });

  test("an unknown mode is INVALID_OPTION and no database file is created", () => {
    const path = tempDbPath();
    for (const bad of ["disk", "", "POWER", 2]) {
      const error = errorOf(() => openSmithersDb(path, { durability: bad as Durability }));
      expect(SmithersError.is(error, "INVALID_OPTION")).toBe(true);
      expect((error as SmithersError).details).toMatchObject({ option: "durability", value: bad });
    }
    expect(existsSync(path)).toBe(false);
  });

  test("setDurability switches an open connection; an unknown mode is refused and changes nothing", async () => {
    const db = open();
    await db.setDurability("power");
    expect([db.durability, level(db)]).toEqual(["power", 2]);
    expect(SmithersError.is(await rejection(db.setDurability("fsync" as Durability)), "INVALID_OPTION")).toBe(true);
    expect([db.durability, level(db)]).toEqual(["power", 2]);
    await db.setDurability("process");
    expect([db.durability, level(db)]).toEqual(["process", 1]);
  });

  test("a durable transaction commits at FULL in process mode and the connection returns to NORMAL, also when it fails", async () => {
    const db = open("process");
    const inside = await db.durableTransaction("intent", async (q) => {
      await q.orm.insert(smithersCron).values(cron);
      return level(db);
    });
    expect(inside).toBe(2);
    expect(level(db)).toBe(1);
    expect(db.durableCommits).toBe(1);
    expect(db.db.select({ id: smithersCron.cronId }).from(smithersCron).all()).toEqual([{ id: "c" }]);
    expect((await rejection(db.durableTransaction("fails", () => Promise.reject(new Error("boom"))))).message).toBe("boom");
    expect([level(db), db.durableCommits]).toEqual([1, 1]);
  });

  test("a durable transaction in power mode stays at FULL", async () => {
    const db = open("power");
    expect(await db.durableTransaction("intent", () => level(db))).toBe(2);
    expect(level(db)).toBe(2);
  });

  test("a durable transaction cannot join an open transaction (its commit would not be its own)", async () => {
    const db = open();
    const nested = await db.withTransaction("outer", () => rejection(db.durableTransaction("inner", () => 1)));
    expect(SmithersError.is(nested, "DB_NESTED_TRANSACTION")).toBe(true);
  });

  test("a side-effect intent (startToolCall with sideEffect) is a durable commit; a plain tool call is not", async () => {
    const db = open("process");
    await startToolCall(db, { ...intent, toolName: "ls" });
    expect(db.durableCommits).toBe(0);
    await startToolCall(db, { ...intent, sideEffect: true, idempotencyKey: "r1:pay:0:stripe" });
    expect(db.durableCommits).toBe(1);
    expect(level(db)).toBe(1);
  });
});
