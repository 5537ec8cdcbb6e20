/**
 * Workers in one process: runWorkflow({ enqueue }) hands runs over, a Worker claims them with a
 * lease and runs them, takes over stale runs, wakes answered ones, and keeps to its concurrency.
 * SQLite for most; PostgreSQL for LISTEN/NOTIFY and for two workers contending for one queue.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { copyFileSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { openSmithersDb, queue, runs, type SmithersDb } from "../../src/db/index.ts";
import { approve, listRunSummaries, MAX_LOAD_RETURNS, runWorkflow, Worker, type WorkerOutcome } from "../../src/engine/index.ts";
import { ownerIdOf } from "../../src/engine/core/owner.ts";
import mixed from "../fixtures/mixed.tsx";
import { pgTestServer } from "../support/postgres.ts";
import { rejection, tempDbPath } from "../helpers.ts";

const MIXED = resolve("test/fixtures/mixed.tsx");
const SLOW_LOAD = resolve("test/fixtures/slow-load.tsx");
const HOLD_WRITE_LOCK = resolve("test/fixtures/hold-write-lock.ts");
const open: SmithersDb[] = [];
const stops: AbortController[] = [];

afterEach(async () => {
  for (const stop of stops.splice(0)) stop.abort();
  for (const db of open.splice(0)) await db.close();
});

function openDb(target: string): SmithersDb {
  const db = openSmithersDb(target);
  open.push(db);
  return db;
}

/** Starts a worker; it stops (draining) after the test. */
function startWorker(db: SmithersDb, o: Partial<ConstructorParameters<typeof Worker>[0]> = {}) {
  const outcomes: WorkerOutcome[] = [];
  const worker = new Worker({ db, pollIntervalMs: 50, ...o, onOutcome: (x) => outcomes.push(x) });
  const stop = new AbortController();
  stops.push(stop);
  const done = worker.run(stop.signal);
  return { worker, outcomes, stop, done };
}

async function until<T>(check: () => Promise<T | undefined | false>, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await Bun.sleep(20);
  }
}

const statusOf = async (db: SmithersDb, runId: string) => (await runs.getRun(db, runId))?.status;

async function approveWhenWaiting(db: SmithersDb, runId: string): Promise<void> {
  await until(async () => (await statusOf(db, runId)) === "waiting-approval");
  await approve(db, { runId, nodeId: "gate" });
}

describe("runWorkflow({ enqueue: true })", () => {
  test("queues the run and returns at once; a worker runs it to its approval, wakes it once approved, and it finishes", async () => {
    const dbPath = tempDbPath();
    const queued = await runWorkflow(mixed, { enqueue: true, workflowPath: MIXED, input: { n: 1 }, runId: "q1", dbPath });
    expect(queued).toEqual({ runId: "q1", status: "queued" });
    const db = openDb(dbPath);
    expect(await runs.getRun(db, "q1")).toBeUndefined();
    expect((await queue.listWaiting(db)).map((r) => [r.runId, r.workflowName, r.workflowPath, r.inputJson])).toEqual([["q1", "mixed", MIXED, '{"n":1}']]);
    const { outcomes } = startWorker(db);
    await approveWhenWaiting(db, "q1");
    await until(async () => (await statusOf(db, "q1")) === "finished");
    expect(await queue.listWaiting(db)).toEqual([]);
    expect(await queue.getRequest(db, "q1")).toBeUndefined();
    await until(async () => outcomes.length >= 2);
    expect(outcomes.map((o) => [o.action, o.runId, "result" in o && o.result ? o.result.status : undefined])).toEqual([
      ["ran", "q1", "waiting-approval"],
      ["resumed", "q1", "finished"],
    ]);
  });

  test("bad requests fail at once with a code and queue nothing", async () => {
    const dbPath = tempDbPath();
    const code = (p: Promise<unknown>) => rejection<{ code: string }>(p).then((e) => e.code);
    expect(await code(runWorkflow(mixed, { enqueue: true, input: { n: 1 }, dbPath }))).toBe("INVALID_OPTION"); // no workflowPath
    expect(await code(runWorkflow(mixed, { enqueue: true, workflowPath: MIXED, input: { n: 1 }, dbPath, maxConcurrency: 2 }))).toBe("INVALID_OPTION");
    expect(await code(runWorkflow(mixed, { enqueue: true, workflowPath: MIXED, input: { n: "one" }, dbPath }))).toBe("INVALID_INPUT");
    expect(await code(runWorkflow(mixed, { enqueue: true, workflowPath: MIXED, resume: true, runId: "nope", dbPath }))).toBe("RUN_NOT_FOUND");
    expect(await code(runWorkflow(mixed, { enqueue: true, workflowPath: MIXED, resume: true, runId: "x", input: { n: 1 }, dbPath }))).toBe("INVALID_OPTION");
    const db = openDb(dbPath);
    expect(await queue.listWaiting(db)).toEqual([]);
    await runWorkflow(mixed, { enqueue: true, workflowPath: MIXED, input: { n: 1 }, runId: "twice", dbPath });
    expect(await code(runWorkflow(mixed, { enqueue: true, workflowPath: MIXED, input: { n: 2 }, runId: "twice", dbPath }))).toBe("RUN_EXISTS");
    expect((await queue.listWaiting(db)).map((r) => [r.runId, r.inputJson])).toEqual([["twice", '{"n":1}']]);
  });
});

describe("Worker", () => {
  test("runs no more than its concurrency at once, and every queued run to its wait", async () => {
    const dbPath = tempDbPath();
    for (let i = 0; i < 6; i++) await runWorkflow(mixed, { enqueue: true, workflowPath: MIXED, input: { n: i }, runId: `c${i}`, dbPath });
    const db = openDb(dbPath);
    let running = 0;
    let most = 0;
    const { outcomes } = startWorker(db, {
      concurrency: 2,
      onEvent: (e) => {
        if (e.type === "RunStarted") most = Math.max(most, ++running);
        if (e.type === "RunFinished" || e.type === "RunWaiting" || e.type === "RunFailed") running--;
      },
    });
    await until(async () => outcomes.filter((o) => o.action === "ran").length === 6);
    expect(most).toBe(2);
    for (let i = 0; i < 6; i++) expect(await statusOf(db, `c${i}`)).toBe("waiting-approval");
  });

  test("a claim whose lease ran out (its worker died) is claimed again; a live lease is not", async () => {
    const dbPath = tempDbPath();
    await runWorkflow(mixed, { enqueue: true, workflowPath: MIXED, input: { n: 7 }, runId: "leased", dbPath });
    const db = openDb(dbPath);
    const now = Date.now();
    // A worker that claims it and dies before its run starts.
    expect((await queue.claimNext(db, { workerId: "dead-worker", nowMs: now, leaseMs: 60_000 }))?.runId).toBe("leased");
    expect(await queue.claimNext(db, { workerId: "other", nowMs: now + 59_000, leaseMs: 1_000 })).toBeUndefined();
    const taken = await queue.claimNext(db, { workerId: "other", nowMs: now + 60_001, leaseMs: 1_000 });
    expect([taken?.runId, taken?.claimedBy, taken?.leaseExpiresAtMs]).toEqual(["leased", "other", now + 61_001]);
    // The dead worker's claim is gone: it can neither renew nor drop it.
    expect(await queue.renewLeases(db, "dead-worker", ["leased"], now, 1_000)).toBe(0);
    expect(await queue.removeClaimed(db, "leased", "dead-worker")).toBe(false);
    // And a worker whose lease is short claims it once it ran out, and runs it.
    expect(await queue.releaseClaim(db, "leased", "other")).toBe(true);
    await queue.claimNext(db, { workerId: "dead-worker", nowMs: Date.now(), leaseMs: 300 });
    startWorker(db, { leaseMs: 300 });
    await until(async () => (await statusOf(db, "leased")) === "waiting-approval");
  });

  test("takes over a run whose owner died (its lease and 4 of its beats missed), from its last committed task, running no finished task again", async () => {
    const dbPath = tempDbPath();
    const dir = dirname(dbPath);
    const execFile = join(dir, "exec.log");
    writeFileSync(execFile, "");
    process.env.MIXED_EXEC_FILE = execFile;
    try {
      const db = openDb(dbPath);
      // Run to the approval in this process, then make it look like its owner died mid-run.
      expect((await runWorkflow(mixed, { runId: "orphan", input: { n: 3 }, dbPath, workflowPath: MIXED })).status).toBe("waiting-approval");
      // Its owner (on another host) beat 2 s ago, every 5 s by default: past this worker's 1 s lease, but not 4 missed beats.
      await runs.updateRun(db, "orphan", { status: "running", runtimeOwnerId: "gone-host:1:dead", heartbeatAtMs: Date.now() - 2_000 });
      const before = readFileSync(execFile, "utf8").trim().split("\n").length;
      const { outcomes } = startWorker(db, { leaseMs: 1_000 });
      await Bun.sleep(400); // several passes
      expect(outcomes).toEqual([]);
      expect((await runs.getRun(db, "orphan"))?.runtimeOwnerId).toBe("gone-host:1:dead");
      // A minute without a beat: taken over.
      await runs.updateRun(db, "orphan", { heartbeatAtMs: Date.now() - 60_000 });
      await until(async () => outcomes.find((o) => o.runId === "orphan"));
      expect(outcomes[0]).toMatchObject({ runId: "orphan", action: "resumed", result: { status: "waiting-approval" } });
      expect(readFileSync(execFile, "utf8").trim().split("\n").length).toBe(before); // nothing ran again
      expect((await runs.getRun(db, "orphan"))?.runtimeOwnerId).not.toBe("gone-host:1:dead");
    } finally {
      delete process.env.MIXED_EXEC_FILE;
    }
  });

  test("a stale run whose owner still runs here is passed over for a lease, not asked about on every pass, and taken once the owner is gone", async () => {
    const dbPath = tempDbPath();
    const db = openDb(dbPath);
    expect((await runWorkflow(mixed, { runId: "late", input: { n: 4 }, dbPath, workflowPath: MIXED })).status).toBe("waiting-approval");
    const owner = Bun.spawn(["sleep", "30"]);
    await Bun.sleep(50);
    try {
      // A live process here (a task blocking its event loop, say) a minute behind on its heartbeat.
      await runs.updateRun(db, "late", { status: "running", runtimeOwnerId: ownerIdOf(owner.pid, "live"), heartbeatAtMs: Date.now() - 60_000 });
      const { outcomes } = startWorker(db, { leaseMs: 1_000, pollIntervalMs: 10 });
      await Bun.sleep(600); // dozens of passes
      expect(outcomes.filter((o) => o.runId === "late").map((o) => o.action)).toEqual(["skipped"]);
      owner.kill("SIGKILL");
      await owner.exited;
      await until(async () => outcomes.find((o) => o.runId === "late" && o.action === "resumed"), 5_000);
      expect(outcomes.filter((o) => o.runId === "late").map((o) => o.action)).toEqual(["skipped", "resumed"]);
    } finally {
      owner.kill("SIGKILL");
    }
  });

  test("with a set of workflows it claims only theirs; without, a file that does not load is given back and passed over", async () => {
    const dbPath = tempDbPath();
    const db = openDb(dbPath);
    await queue.enqueue(
      db,
      { runId: "elsewhere", workflowName: "missing", workflowPath: "/nowhere/missing.tsx", inputJson: null, enqueuedAtMs: 1 },
      { capacity: 10, resume: false },
      () => ({ runId: "_", timestampMs: 0, type: "RunRefused", payloadJson: "{}" }),
    );
    await runWorkflow(mixed, { enqueue: true, workflowPath: MIXED, input: { n: 1 }, runId: "mine", dbPath });
    const named = startWorker(db, { workflows: [{ name: "mixed", path: MIXED, workflow: mixed }] });
    await until(async () => (await statusOf(db, "mine")) === "waiting-approval");
    named.stop.abort();
    await named.done;
    expect((await queue.getRequest(db, "elsewhere"))?.claimedBy).toBeNull();
    const anyFile = startWorker(db);
    await until(async () => anyFile.outcomes.find((o) => o.runId === "elsewhere"));
    expect(anyFile.outcomes.find((o) => o.runId === "elsewhere")).toMatchObject({ action: "returned" });
    expect((await queue.getRequest(db, "elsewhere"))?.startedAtMs).toBeNull(); // back in line for another worker
    await Bun.sleep(300); // several passes: it is not claimed again by this worker
    expect(anyFile.outcomes.filter((o) => o.runId === "elsewhere")).toHaveLength(1);
  });

  test("a request whose workflow no worker could load fails after MAX_LOAD_RETURNS tries: a failed run says why", async () => {
    const dbPath = tempDbPath();
    const db = openDb(dbPath);
    await queue.enqueue(
      db,
      { runId: "lost", workflowName: "gone", workflowPath: "/nowhere/gone.tsx", inputJson: null, enqueuedAtMs: 5 },
      { capacity: 10, resume: false },
      () => ({ runId: "_", timestampMs: 0, type: "RunRefused", payloadJson: "{}" }),
    );
    // Four workers (each new, so none passes over it yet) give it back once each.
    for (let i = 1; i < MAX_LOAD_RETURNS; i++) {
      const w = startWorker(db);
      await until(async () => w.outcomes.find((o) => o.runId === "lost"));
      expect(w.outcomes[0]).toMatchObject({ action: "returned" });
      w.stop.abort();
      await w.done;
      expect((await queue.getRequest(db, "lost"))?.returnCount).toBe(i);
    }
    const last = startWorker(db);
    await until(async () => last.outcomes.find((o) => o.runId === "lost"));
    expect(last.outcomes[0]).toMatchObject({ action: "dropped" });
    expect(await queue.getRequest(db, "lost")).toBeUndefined();
    const run = await runs.getRun(db, "lost");
    expect([run?.status, run?.workflowPath, JSON.parse(run?.errorJson ?? "{}").code]).toEqual(["failed", "/nowhere/gone.tsx", "WORKFLOW_LOAD_FAILED"]);
  });

  test("a request whose run fails before its row exists (an input its workflow now refuses) is stored failed with the reason, for ps to show", async () => {
    const dbPath = tempDbPath();
    const db = openDb(dbPath);
    // Queued while the workflow's input was { n: string }; the workflow has changed since.
    await queue.enqueue(
      db,
      { runId: "refused", workflowName: "mixed", workflowPath: MIXED, inputJson: '{"n":"one"}', enqueuedAtMs: 5 },
      { capacity: 10, resume: false },
      () => ({ runId: "_", timestampMs: 0, type: "RunRefused", payloadJson: "{}" }),
    );
    const { outcomes } = startWorker(db, { workflows: [{ name: "mixed", path: MIXED, workflow: mixed }] });
    await until(async () => outcomes.find((o) => o.runId === "refused"));
    expect(outcomes[0]).toMatchObject({ runId: "refused", action: "dropped", reason: expect.stringContaining("INVALID_INPUT") });
    expect(await queue.getRequest(db, "refused")).toBeUndefined();
    const run = await runs.getRun(db, "refused");
    expect([run?.status, run?.workflowPath, JSON.parse(run?.errorJson ?? "{}").code]).toEqual(["failed", MIXED, "INVALID_INPUT"]);
    expect((await listRunSummaries(db, { limit: 10, withQueued: true })).map((r) => [r.runId, r.status])).toEqual([["refused", "failed"]]);
  });

  test("a claim whose run failed on a write lock held past every retry is taken up again on the next pass once the lock is free, not left idle until its lease runs out", async () => {
    const dbPath = tempDbPath();
    // A copy of its own: a module another test already loaded in this process would load at once, before the lock is taken.
    const slowLoad = join(dirname(SLOW_LOAD), `.slow-load-${process.pid}.tsx`);
    copyFileSync(SLOW_LOAD, slowLoad);
    // Few, short retries: this worker gives up on the held lock in well under a second.
    const db = openSmithersDb(dbPath, { busyTimeoutMs: 100, retryPolicy: { retries: 1, baseDelayMs: 20, maxDelayMs: 50, jitter: 0 } });
    open.push(db);
    await queue.enqueue(
      db,
      { runId: "held", workflowName: "slow-load", workflowPath: slowLoad, inputJson: null, enqueuedAtMs: 1 },
      { capacity: 10, resume: false },
      () => ({ runId: "_", timestampMs: 0, type: "RunRefused", payloadJson: "{}" }),
    );
    // Another process takes the write lock as soon as the request is claimed, while its workflow loads, and holds it 4 s.
    const holder = Bun.spawn([process.execPath, HOLD_WRITE_LOCK, dbPath, "held", "4000"], { stdout: "pipe" });
    process.env.SLOW_LOAD_MS = "500";
    try {
      const { outcomes } = startWorker(db, { leaseMs: 120_000 });
      const failed = await until(async () => outcomes.find((o) => o.runId === "held"), 15_000);
      expect(failed).toMatchObject({ action: "error", reason: expect.stringMatching(/DB_WRITE_FAILED|locked/) });
      expect((await new Response(holder.stdout).text()).split("\n")).toEqual(["locked", "released", ""]);
      const freed = Date.now();
      await until(async () => (await statusOf(db, "held")) === "finished", 10_000);
      expect(Date.now() - freed).toBeLessThan(10_000); // the lease (2 minutes) did not have to run out
      expect(await queue.getRequest(db, "held")).toBeUndefined();
      expect(outcomes.filter((o) => o.runId === "held").map((o) => o.action)).toEqual(["error", "ran"]);
    } finally {
      delete process.env.SLOW_LOAD_MS;
      holder.kill();
      rmSync(slowLoad, { force: true });
    }
  }, 30_000);

  test("a worker with a set of workflows wakes a run another host recorded under its own path, by the file's name", async () => {
    const dbPath = tempDbPath();
    const db = openDb(dbPath);
    expect((await runWorkflow(mixed, { runId: "far", input: { n: 2 }, dbPath, workflowPath: "/other-host/flows/mixed.tsx" })).status).toBe("waiting-approval");
    await approve(db, { runId: "far", nodeId: "gate" });
    const { outcomes } = startWorker(db, { workflows: [{ name: "mixed", path: MIXED, workflow: mixed }] });
    await until(async () => outcomes.find((o) => o.runId === "far"));
    expect(outcomes[0]).toMatchObject({ runId: "far", action: "resumed", result: { status: "finished" } });
  });

  test("bad options are INVALID_OPTION", async () => {
    const db = openDb(tempDbPath());
    expect(() => new Worker({ db, concurrency: 0 })).toThrow(expect.objectContaining({ code: "INVALID_OPTION" }));
    expect(() => new Worker({ db, concurrency: 1.5 })).toThrow(expect.objectContaining({ code: "INVALID_OPTION" }));
    expect(() => new Worker({ db, leaseMs: -1 })).toThrow(expect.objectContaining({ code: "INVALID_OPTION" }));
    // A heartbeat slower than a quarter of the stale threshold would let a live run be taken over.
    expect((await rejection<{ code: string }>(runWorkflow(mixed, { input: { n: 1 }, dbPath: db.target, heartbeatMs: 60_000 }))).code).toBe("INVALID_OPTION");
    expect((await rejection<{ code: string }>(runWorkflow(mixed, { input: { n: 1 }, dbPath: db.target, heartbeatMs: 0 }))).code).toBe("INVALID_OPTION");
  });
});

const pg = await pgTestServer();

describe.skipIf(!pg)("Worker on PostgreSQL", () => {
  test("an idle worker hears of a queued run at once (LISTEN/NOTIFY), long before its next poll", async () => {
    const url = await pg!.createDatabase();
    const db = openDb(url);
    const { outcomes } = startWorker(db, { pollIntervalMs: 60_000 });
    await Bun.sleep(300); // its first pass found nothing; it now sleeps for a minute unless notified
    const t0 = Date.now();
    await runWorkflow(mixed, { enqueue: true, workflowPath: MIXED, input: { n: 1 }, runId: "heard", dbPath: url });
    await until(async () => outcomes.find((o) => o.runId === "heard"), 15_000);
    expect(await statusOf(db, "heard")).toBe("waiting-approval");
    // An approval is news too: the run is woken without a poll.
    await approve(db, { runId: "heard", nodeId: "gate" });
    await until(async () => (await statusOf(db, "heard")) === "finished", 15_000);
    expect(Date.now() - t0).toBeLessThan(30_000);
  });

  test("two workers on one queue run each of 20 runs once: no task body runs twice", async () => {
    const url = await pg!.createDatabase();
    const execFile = join(dirname(tempDbPath()), "exec.log");
    writeFileSync(execFile, "");
    process.env.MIXED_EXEC_FILE = execFile;
    try {
      for (let i = 0; i < 20; i++) await runWorkflow(mixed, { enqueue: true, workflowPath: MIXED, input: { n: i }, runId: `w${i}`, dbPath: url });
      const a = startWorker(openDb(url), { concurrency: 4 });
      const b = startWorker(openDb(url), { concurrency: 4 });
      const db = openDb(url);
      await until(async () => a.outcomes.length + b.outcomes.length >= 20, 30_000);
      const ranBy = (w: typeof a) => w.outcomes.filter((o) => o.action === "ran").map((o) => o.runId);
      expect([...ranBy(a), ...ranBy(b)].sort()).toEqual(Array.from({ length: 20 }, (_, i) => `w${i}`).sort());
      expect(ranBy(a).length).toBeGreaterThan(0);
      expect(ranBy(b).length).toBeGreaterThan(0);
      const lines = readFileSync(execFile, "utf8").trim().split("\n");
      expect(new Set(lines).size).toBe(lines.length);
      expect(lines).toHaveLength(20 * 8); // fetch, 4 branches, 3 rounds: each once
      for (let i = 0; i < 20; i++) expect(await statusOf(db, `w${i}`)).toBe("waiting-approval");
    } finally {
      delete process.env.MIXED_EXEC_FILE;
    }
  });
});
