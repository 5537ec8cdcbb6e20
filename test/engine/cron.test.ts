import { afterAll, describe, expect, test } from "bun:test";
import { copyFileSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { openSmithersDb } from "../../src/db/index.ts";
import { addCron, fireDueCrons, listCrons, removeCron, supervise } from "../../src/engine/index.ts";
import type { SmithersError } from "../../src/errors/index.ts";
import { execute, indexNames, query, tempDbPath } from "../helpers.ts";

const steps = resolve(import.meta.dir, "../fixtures/steps.tsx");
const T0 = Date.parse("2026-01-01T00:00:00Z");
const MIN = 60_000;
const at = (ms: number) => () => ms;

async function rejection(p: Promise<unknown>): Promise<SmithersError> {
  try {
    await p;
  } catch (error) {
    return error as SmithersError;
  }
  throw new Error("expected a rejection");
}

describe("addCron / listCrons / removeCron", () => {
  test("stores the schedule with its first fire time after now", async () => {
    const db = openSmithersDb(tempDbPath());
    const cron = await addCron(db, { workflowPath: steps, schedule: "*/5 * * * *", input: { label: "x" }, now: at(T0 + MIN) });
    expect([cron.cronId, cron.timezone, cron.nextRunAtMs, cron.input]).toEqual(["steps", "UTC", T0 + 5 * MIN, { label: "x" }]);
    expect((await listCrons(db)).map((c) => c.cronId)).toEqual(["steps"]);
    await removeCron(db, "steps");
    expect(await listCrons(db)).toEqual([]);
    expect((await rejection(removeCron(db, "steps"))).code).toBe("CRON_NOT_FOUND");
    await db.close();
  });

  test("a time zone changes the fire time: 9:00 in New York is 14:00 UTC in winter", async () => {
    const db = openSmithersDb(tempDbPath());
    const ny = await addCron(db, { workflowPath: steps, schedule: "0 9 * * *", timezone: "America/New_York", cronId: "ny", now: at(T0) });
    const utc = await addCron(db, { workflowPath: steps, schedule: "0 9 * * *", cronId: "utc", now: at(T0) });
    expect(new Date(ny.nextRunAtMs!).toISOString()).toBe("2026-01-01T14:00:00.000Z");
    expect(new Date(utc.nextRunAtMs!).toISOString()).toBe("2026-01-01T09:00:00.000Z");
    await db.close();
  });

  test("an invalid pattern or time zone is INVALID_CRON and a taken id CRON_EXISTS; nothing is written", async () => {
    const db = openSmithersDb(tempDbPath());
    expect((await rejection(addCron(db, { workflowPath: steps, schedule: "61 * * * *" }))).code).toBe("INVALID_CRON");
    expect((await rejection(addCron(db, { workflowPath: steps, schedule: "not cron" }))).code).toBe("INVALID_CRON");
    expect((await rejection(addCron(db, { workflowPath: steps, schedule: "0 9 * * *", timezone: "Mars/Olympus" }))).code).toBe("INVALID_CRON");
    expect(await listCrons(db)).toEqual([]);
    await addCron(db, { workflowPath: steps, schedule: "0 9 * * *", cronId: "a" });
    expect((await rejection(addCron(db, { workflowPath: steps, schedule: "0 10 * * *", cronId: "a" }))).code).toBe("CRON_EXISTS");
    expect((await listCrons(db)).map((c) => c.schedule)).toEqual(["0 9 * * *"]);
    await db.close();
  });
});

describe("fireDueCrons", () => {
  test("a due slot starts exactly one run, cron:<id>:<slot>, with the schedule's input; the schedule moves on", async () => {
    const dbPath = tempDbPath();
    const db = openSmithersDb(dbPath);
    await addCron(db, { workflowPath: steps, schedule: "*/5 * * * *", input: { label: "tick" }, now: at(T0 + MIN) });
    expect(await fireDueCrons({ db, now: at(T0 + 4 * MIN) })).toEqual([]); // not due yet
    const fires = await fireDueCrons({ db, now: at(T0 + 5 * MIN) });
    expect(fires.map((f) => [f.action, f.runId])).toEqual([["started", `cron:steps:${T0 + 5 * MIN}`]]);
    const fire = fires[0]!;
    if (fire.action !== "started") throw new Error("not started");
    expect((await fire.result).status).toBe("finished");
    expect(await fireDueCrons({ db, now: at(T0 + 5 * MIN) })).toEqual([]);
    expect(await query(dbPath, "SELECT run_id, status, workflow_path FROM _smithers_runs")).toEqual([
      { run_id: `cron:steps:${T0 + 5 * MIN}`, status: "finished", workflow_path: steps },
    ]);
    expect(await query(dbPath, "SELECT label FROM step WHERE node_id = 'a'")).toEqual([{ label: "tick" }]);
    const [row] = await listCrons(db);
    expect([row?.lastRunAtMs, row?.nextRunAtMs, row?.lastRunId, row?.lastError]).toEqual([T0 + 5 * MIN, T0 + 10 * MIN, fire.runId, null]);
    await db.close();
  });

  test("after downtime only the latest missed slot runs; the others are counted as skipped", async () => {
    const dbPath = tempDbPath();
    const db = openSmithersDb(dbPath);
    await addCron(db, { workflowPath: steps, schedule: "*/5 * * * *", input: { label: "late" }, now: at(T0 + MIN) });
    // Down from 00:01 to 01:02: slots 00:05 … 01:00 (12) were missed.
    const outcomes = await supervise({ db, now: at(T0 + 62 * MIN) });
    const runId = `cron:steps:${T0 + 60 * MIN}`;
    expect(outcomes.map((o) => o.action)).toEqual(["cron-skipped", "cron-started"]);
    expect(outcomes[0]).toEqual({ runId, cronId: "steps", action: "cron-skipped", count: 11 });
    expect(await query(dbPath, "SELECT run_id FROM _smithers_runs")).toEqual([{ run_id: runId }]);
    expect(await query(dbPath, "SELECT skipped_slots, next_run_at_ms FROM _smithers_cron")).toEqual([{ skipped_slots: 11, next_run_at_ms: T0 + 65 * MIN }]);
    await db.close();
  });

  test("two supervisors racing on one database file start the slot exactly once", async () => {
    const dbPath = tempDbPath();
    const [one, two] = [openSmithersDb(dbPath), openSmithersDb(dbPath)];
    await addCron(one, { workflowPath: steps, schedule: "*/5 * * * *", input: { label: "race" }, now: at(T0) });
    const now = at(T0 + 5 * MIN);
    const outcomes = (await Promise.all([supervise({ db: one, now }), supervise({ db: two, now })])).flat();
    // The other finds the slot claimed (cron-lost) or, if it looks after the claim committed, not due at all.
    expect(outcomes.filter((o) => o.action === "cron-started")).toHaveLength(1);
    expect(outcomes.filter((o) => o.action !== "cron-started" && o.action !== "cron-lost")).toEqual([]);
    expect(await query(dbPath, "SELECT run_id, status FROM _smithers_runs")).toEqual([{ run_id: `cron:steps:${T0 + 5 * MIN}`, status: "finished" }]);
    await one.close();
    await two.close();
  });

  test("a fire that cannot start stores its error on the schedule, which moves on; a later good fire clears it", async () => {
    const dbPath = tempDbPath();
    // Beside the fixture, so the copy resolves the same imports.
    const file = join(dirname(steps), `cron-copy-${crypto.randomUUID()}.tsx`);
    copyFileSync(steps, file);
    afterAll(() => rmSync(file, { force: true }));
    const db = openSmithersDb(dbPath);
    await addCron(db, { workflowPath: file, schedule: "*/5 * * * *", input: { label: 7 }, cronId: "bad-input", now: at(T0) });
    rmSync(file);
    await addCron(db, { workflowPath: file, schedule: "*/5 * * * *", input: { label: "x" }, cronId: "no-file", now: at(T0) });
    const fires = await fireDueCrons({ db, now: at(T0 + 5 * MIN) });
    expect(fires.map((f) => [f.cronId, f.action, f.action === "failed" ? f.error.code : ""])).toEqual([
      ["bad-input", "failed", "WORKFLOW_LOAD_FAILED"],
      ["no-file", "failed", "WORKFLOW_LOAD_FAILED"],
    ]);
    copyFileSync(steps, file);
    const next = await fireDueCrons({ db, now: at(T0 + 10 * MIN) });
    expect(next.map((f) => [f.cronId, f.action, f.action === "failed" ? f.error.code : ""])).toEqual([
      ["bad-input", "failed", "INVALID_INPUT"],
      ["no-file", "started", ""],
    ]);
    for (const f of next) if (f.action === "started") await f.result;
    const rows = await listCrons(db);
    expect(rows.map((c) => [c.cronId, c.lastError?.code ?? null, c.nextRunAtMs])).toEqual([
      ["bad-input", "INVALID_INPUT", T0 + 15 * MIN],
      ["no-file", null, T0 + 15 * MIN],
    ]);
    expect(await query(dbPath, "SELECT run_id FROM _smithers_runs")).toEqual([{ run_id: `cron:no-file:${T0 + 10 * MIN}` }]);
    await db.close();
  });
});

describe("opening an older database", () => {
  test("adds the cron columns an earlier version's _smithers_cron lacks, keeping its rows", async () => {
    const dbPath = tempDbPath();
    // Types both dialects read alike (bigint, boolean), as an older Smithers created them on either.
    await execute(
      dbPath,
      `CREATE TABLE "_smithers_cron" ("cron_id" text PRIMARY KEY, "pattern" text NOT NULL, "workflow_path" text NOT NULL,
      "input_json" text, "enabled" boolean DEFAULT TRUE NOT NULL, "created_at_ms" bigint NOT NULL, "last_run_at_ms" bigint,
      "next_run_at_ms" bigint, "error_json" text)`,
    );
    await execute(
      dbPath,
      `INSERT INTO "_smithers_cron" (cron_id, pattern, workflow_path, created_at_ms, next_run_at_ms) VALUES ('old', '0 3 * * *', 'wf.tsx', 1, 2)`,
    );
    const db = openSmithersDb(dbPath);
    expect((await listCrons(db)).map((c) => [c.cronId, c.timezone, c.skippedSlots, c.lastRunId])).toEqual([["old", "UTC", 0, null]]);
    expect(await indexNames(dbPath)).toContain("_smithers_cron_due_idx");
    await db.close();
  });
});
