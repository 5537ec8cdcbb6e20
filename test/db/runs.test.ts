import { afterEach, describe, expect, test } from "bun:test";
import {
  claimRunForResume,
  claimWaitingRun,
  databaseNow,
  releaseWaitingClaim,
  getRun,
  heartbeatRun,
  insertRun,
  listDueRuns,
  listStaleRuns,
  releaseRunResumeClaim,
  updateRun,
  type NewRunRow,
} from "../../src/db/adapters/runs.ts";
import { SmithersDb, STALE_RUN_THRESHOLD_MS } from "../../src/db/index.ts";
import { forEachBackend, removeTempDirs, tempDbPath } from "./backends.ts";

const NOW = 1_000_000;
const run = (runId: string, overrides: Partial<NewRunRow> = {}): NewRunRow => ({
  runId,
  workflowName: "wf",
  status: "running",
  createdAtMs: 1,
  heartbeatAtMs: NOW,
  runtimeOwnerId: "owner-a",
  ...overrides,
});
const staleAt = NOW - STALE_RUN_THRESHOLD_MS - 1;

forEachBackend((db) => {
  describe("insertRun", () => {
    test("stores the row as given", async () => {
      await insertRun(db(), run("r1", { configJson: '{"maxConcurrency":2}' }));
      const row = await getRun(db(), "r1");
      expect([row?.runId, row?.status, row?.heartbeatAtMs, row?.configJson]).toEqual(["r1", "running", NOW, '{"maxConcurrency":2}']);
    });
  });

  describe("updateRun", () => {
    test("patches only the given columns", async () => {
      await insertRun(db(), run("r1"));
      await updateRun(db(), "r1", { status: "finished", finishedAtMs: NOW + 5 });
      const row = await getRun(db(), "r1");
      expect([row?.status, row?.finishedAtMs, row?.runtimeOwnerId]).toEqual(["finished", NOW + 5, "owner-a"]);
    });
  });

  describe("heartbeatRun", () => {
    test("moves the heartbeat while the caller still owns the run", async () => {
      await insertRun(db(), run("r1"));
      expect(await heartbeatRun(db(), "r1", "owner-a", NOW + 10)).toBe(true);
      const row = await getRun(db(), "r1");
      expect([row?.heartbeatAtMs, row?.runtimeOwnerId]).toEqual([NOW + 10, "owner-a"]);
    });

    test("without a time, stamps the database's clock (what every host compares heartbeats with)", async () => {
      await insertRun(db(), run("r1"));
      const before = await databaseNow(db());
      expect(await heartbeatRun(db(), "r1", "owner-a")).toBe(true);
      const after = await databaseNow(db());
      const beat = (await getRun(db(), "r1"))?.heartbeatAtMs ?? 0;
      expect(beat >= before && beat <= after).toBe(true);
      expect(Math.abs(after - Date.now())).toBeLessThan(5_000); // this host's clock is right here: the two agree
    });

    test("reports false and changes nothing once another owner has claimed the run", async () => {
      await insertRun(db(), run("r1"));
      expect(await heartbeatRun(db(), "r1", "owner-b", NOW + 10)).toBe(false);
      const row = await getRun(db(), "r1");
      expect([row?.heartbeatAtMs, row?.runtimeOwnerId]).toEqual([NOW, "owner-a"]);
    });
  });

  describe("listStaleRuns", () => {
    test("returns running runs whose heartbeat is older than 30 s by default", async () => {
      await insertRun(db(), run("fresh", { heartbeatAtMs: NOW - 1_000 }));
      await insertRun(db(), run("edge", { heartbeatAtMs: NOW - STALE_RUN_THRESHOLD_MS }));
      await insertRun(db(), run("old", { heartbeatAtMs: staleAt }));
      await insertRun(db(), run("older", { heartbeatAtMs: staleAt - 5 }));
      await insertRun(db(), run("finished", { status: "finished", heartbeatAtMs: 0 }));
      expect((await listStaleRuns(db(), { nowMs: NOW })).map((r) => r.runId)).toEqual(["older", "old"]);
    });

    test("treats a running run that never heartbeated as stale", async () => {
      await insertRun(db(), run("silent", { heartbeatAtMs: null }));
      expect((await listStaleRuns(db(), { nowMs: NOW })).map((r) => r.runId)).toEqual(["silent"]);
    });

    test("honours a custom staleAfterMs", async () => {
      await insertRun(db(), run("r1", { heartbeatAtMs: NOW - 2_000 }));
      expect(await listStaleRuns(db(), { nowMs: NOW, staleAfterMs: 5_000 })).toEqual([]);
      expect((await listStaleRuns(db(), { nowMs: NOW, staleAfterMs: 1_000 })).map((r) => r.runId)).toEqual(["r1"]);
    });
  });

  describe("claimRunForResume", () => {
    const claim = { runId: "r1", expectedOwnerId: "owner-a", expectedHeartbeatAtMs: staleAt, claimOwnerId: "sup-1", nowMs: NOW };

    test("takes a stale run whose owner and heartbeat are as observed", async () => {
      await insertRun(db(), run("r1", { heartbeatAtMs: staleAt }));
      expect(await claimRunForResume(db(), claim)).toBe(true);
      const row = await getRun(db(), "r1");
      expect([row?.runtimeOwnerId, row?.heartbeatAtMs]).toEqual(["sup-1", NOW]);
    });

    test("fails when the owner heartbeated since it was observed", async () => {
      await insertRun(db(), run("r1", { heartbeatAtMs: staleAt }));
      await heartbeatRun(db(), "r1", "owner-a", NOW - 10);
      expect(await claimRunForResume(db(), claim)).toBe(false);
      expect((await getRun(db(), "r1"))?.runtimeOwnerId).toBe("owner-a");
    });

    test("fails when the owner changed since it was observed", async () => {
      await insertRun(db(), run("r1", { heartbeatAtMs: staleAt, runtimeOwnerId: "owner-z" }));
      expect(await claimRunForResume(db(), claim)).toBe(false);
    });

    test("fails on a run that is not stale, even with matching values", async () => {
      await insertRun(db(), run("r1", { heartbeatAtMs: NOW - 100 }));
      expect(await claimRunForResume(db(), { ...claim, expectedHeartbeatAtMs: NOW - 100 })).toBe(false);
    });

    test("fails on a run that is no longer running", async () => {
      await insertRun(db(), run("r1", { heartbeatAtMs: staleAt, status: "finished" }));
      expect(await claimRunForResume(db(), claim)).toBe(false);
    });

    test("matches a null owner and heartbeat null-safely", async () => {
      await insertRun(db(), run("r1", { heartbeatAtMs: null, runtimeOwnerId: null }));
      expect(await claimRunForResume(db(), { ...claim, expectedOwnerId: null, expectedHeartbeatAtMs: null })).toBe(true);
    });

    test("of two concurrent claims on one connection exactly one wins", async () => {
      await insertRun(db(), run("r1", { heartbeatAtMs: staleAt }));
      const results = await Promise.all([
        claimRunForResume(db(), { ...claim, claimOwnerId: "sup-1" }),
        claimRunForResume(db(), { ...claim, claimOwnerId: "sup-2" }),
      ]);
      expect(results.filter(Boolean)).toHaveLength(1);
    });
  });

  describe("releaseRunResumeClaim", () => {
    const release = { runId: "r1", claimOwnerId: "sup-1", restoreOwnerId: "owner-a", restoreHeartbeatAtMs: staleAt };

    test("restores the previous owner and heartbeat while the claim is held", async () => {
      await insertRun(db(), run("r1", { heartbeatAtMs: staleAt }));
      await claimRunForResume(db(), { runId: "r1", expectedOwnerId: "owner-a", expectedHeartbeatAtMs: staleAt, claimOwnerId: "sup-1", nowMs: NOW });
      expect(await releaseRunResumeClaim(db(), release)).toBe(true);
      const row = await getRun(db(), "r1");
      expect([row?.runtimeOwnerId, row?.heartbeatAtMs]).toEqual(["owner-a", staleAt]);
    });

    test("does nothing once someone else holds the run", async () => {
      await insertRun(db(), run("r1", { runtimeOwnerId: "sup-2" }));
      expect(await releaseRunResumeClaim(db(), release)).toBe(false);
      expect((await getRun(db(), "r1"))?.runtimeOwnerId).toBe("sup-2");
    });
  });

  describe("claimWaitingRun", () => {
    const waiting = (wakeAtMs: number | null) => run("w1", { status: "waiting-approval", runtimeOwnerId: null, heartbeatAtMs: null, wakeAtMs });

    test("takes a due waiting run: running, owned and heartbeated by the claimer", async () => {
      await insertRun(db(), waiting(NOW - 10));
      expect(await claimWaitingRun(db(), { runId: "w1", fromStatus: "waiting-approval", claimOwnerId: "sup-1", nowMs: NOW })).toBe(true);
      const row = await getRun(db(), "w1");
      expect([row?.status, row?.runtimeOwnerId, row?.heartbeatAtMs]).toEqual(["running", "sup-1", NOW]);
    });

    test("of two claims on one due run exactly one wins", async () => {
      await insertRun(db(), waiting(NOW - 10));
      const claim = (claimOwnerId: string) => claimWaitingRun(db(), { runId: "w1", fromStatus: "waiting-approval", claimOwnerId, nowMs: NOW });
      expect((await Promise.all([claim("sup-1"), claim("sup-2")])).filter(Boolean)).toHaveLength(1);
    });

    test("fails when the run was woken by another daemon and is waiting again, not due, in the same status", async () => {
      await insertRun(db(), waiting(NOW - 10));
      const [seen] = await listDueRuns(db(), NOW);
      // Another daemon wakes it first; the run goes on to a second gate and waits there, not due.
      expect(await claimWaitingRun(db(), { runId: "w1", fromStatus: "waiting-approval", claimOwnerId: "sup-1", nowMs: NOW })).toBe(true);
      await updateRun(db(), "w1", { status: "waiting-approval", wakeAtMs: null, runtimeOwnerId: "sup-1" });
      expect(await claimWaitingRun(db(), { runId: "w1", fromStatus: seen!.status, claimOwnerId: "sup-2", nowMs: NOW })).toBe(false);
      const row = await getRun(db(), "w1");
      expect([row?.status, row?.runtimeOwnerId]).toEqual(["waiting-approval", "sup-1"]);
    });
  });

  describe("releaseWaitingClaim", () => {
    test("hands a claimed run back waiting, with the wake time it was found with, so the next pass finds it due again", async () => {
      await insertRun(db(), run("w1", { status: "waiting-approval", runtimeOwnerId: null, heartbeatAtMs: null, wakeAtMs: NOW - 10 }));
      const [seen] = await listDueRuns(db(), NOW);
      expect(await claimWaitingRun(db(), { runId: "w1", fromStatus: "waiting-approval", claimOwnerId: "sup-1", nowMs: NOW })).toBe(true);
      await updateRun(db(), "w1", { wakeAtMs: null }); // what a resume that then failed leaves behind
      expect(await releaseWaitingClaim(db(), { runId: "w1", claimOwnerId: "sup-1", status: seen!.status, wakeAtMs: seen!.wakeAtMs })).toBe(true);
      expect((await listDueRuns(db(), NOW)).map((r) => [r.runId, r.status, r.wakeAtMs])).toEqual([["w1", "waiting-approval", NOW - 10]]);
    });
  });
});

describe("claimRunForResume", () => {
  const opened: SmithersDb[] = [];
  afterEach(async () => {
    for (const db of opened.splice(0)) await db.close();
    removeTempDirs();
  });

  test("of two supervisors on separate connections racing for one stale run exactly one wins", async () => {
    const path = tempDbPath();
    const first = new SmithersDb(path);
    const second = new SmithersDb(path);
    opened.push(first, second);
    await insertRun(first, run("r1", { heartbeatAtMs: staleAt }));
    const claim = { runId: "r1", expectedOwnerId: "owner-a", expectedHeartbeatAtMs: staleAt, nowMs: NOW };
    const results = await Promise.all([
      claimRunForResume(first, { ...claim, claimOwnerId: "sup-1" }),
      claimRunForResume(second, { ...claim, claimOwnerId: "sup-2" }),
    ]);
    expect(results.filter(Boolean)).toHaveLength(1);
    const winner = results[0] ? "sup-1" : "sup-2";
    expect((await getRun(first, "r1"))?.runtimeOwnerId).toBe(winner);
  });
});
