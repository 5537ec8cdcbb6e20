/**
 * The queue's order and its deduplicated starts, on SQLite and (in the PostgreSQL engine suite) on
 * PostgreSQL: priorities and tenant turns (claimNext and a real Worker's stored start order),
 * debounced starts and their not-before time, and idempotency keys under concurrent starts.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { resolve } from "node:path";
import { openSmithersDb, queue, type SmithersDb } from "../../src/db/index.ts";
import { runWorkflow, startRequestHash, Worker } from "../../src/engine/index.ts";
import steps from "../fixtures/steps.tsx";
import { query, rejection, tempDbPath, waitFor } from "../helpers.ts";

const STEPS = resolve("test/fixtures/steps.tsx");
const open: SmithersDb[] = [];

afterEach(async () => {
  for (const db of open.splice(0)) await db.close();
});

function openDb(target: string): SmithersDb {
  const db = openSmithersDb(target);
  open.push(db);
  return db;
}

/** Queues a request straight into the adapter (no workflow file is loaded), as one admission. */
function request(db: SmithersDb, runId: string, o: { priority?: number; tenant?: string; enqueuedAtMs?: number; input?: unknown } = {}) {
  return queue.enqueue(
    db,
    {
      runId,
      workflowName: "steps",
      workflowPath: STEPS,
      inputJson: JSON.stringify(o.input ?? { label: runId }),
      enqueuedAtMs: o.enqueuedAtMs ?? 1_000,
      ...(o.priority === undefined ? {} : { priority: o.priority }),
      ...(o.tenant === undefined ? {} : { tenant: o.tenant }),
    },
    { capacity: 100_000, resume: false },
    () => ({ runId: "_", timestampMs: 0, type: "RunRefused", payloadJson: "{}" }),
  );
}

async function claimAll(db: SmithersDb, nowMs = Date.now()): Promise<string[]> {
  const order: string[] = [];
  for (;;) {
    const row = await queue.claimNext(db, { workerId: "w", nowMs, leaseMs: 60_000, skip: order });
    if (!row) return order;
    order.push(row.runId);
  }
}

describe("queue.claimNext", () => {
  test("claims the highest priority first, then takes turns between tenants, each tenant's oldest request first", async () => {
    const db = openDb(tempDbPath());
    let t = 1_000;
    for (const id of ["a1", "a2", "a3"]) await request(db, id, { tenant: "A", enqueuedAtMs: t++ });
    for (const id of ["b1", "b2"]) await request(db, id, { tenant: "B", enqueuedAtMs: t++ });
    await request(db, "c1", { tenant: "C", enqueuedAtMs: t++ });
    await request(db, "none1", { enqueuedAtMs: t++ });
    await request(db, "urgent", { tenant: "B", priority: 5, enqueuedAtMs: t++ });
    await request(db, "low", { tenant: "C", priority: -1, enqueuedAtMs: 0 });
    const order = await claimAll(db);
    expect(order[0]).toBe("urgent");
    // B was served by "urgent", so the never-served tenants ('' and A, C) come first, oldest-named first, then B.
    expect(order.slice(1)).toEqual(["none1", "a1", "c1", "b1", "a2", "b2", "a3", "low"]);
  });

  test("a tenant's backlog of 200 delays another tenant's one request by at most one claim", async () => {
    const db = openDb(tempDbPath());
    for (let i = 0; i < 200; i++) await request(db, `a${String(i).padStart(3, "0")}`, { tenant: "A", enqueuedAtMs: 1_000 + i });
    const first = await queue.claimNext(db, { workerId: "w", nowMs: Date.now(), leaseMs: 60_000 });
    await request(db, "b", { tenant: "B", enqueuedAtMs: 5_000 });
    const second = await queue.claimNext(db, { workerId: "w", nowMs: Date.now(), leaseMs: 60_000 });
    expect([first?.runId, second?.runId]).toEqual(["a000", "b"]);
  });
});

describe("Worker", () => {
  test("Priority and tenant fairness with a queue of 200 runs for tenant A and 1 for tenant B: from the stored start order, the priority runs start first and B's run within the next two claims", async () => {
    const dbPath = tempDbPath();
    for (let i = 0; i < 200; i++) await runWorkflow(steps, { enqueue: true, workflowPath: STEPS, dbPath, input: { label: "a" }, runId: `a${i}`, tenant: "A" });
    await runWorkflow(steps, { enqueue: true, workflowPath: STEPS, dbPath, input: { label: "b" }, runId: "b", tenant: "B" });
    await runWorkflow(steps, { enqueue: true, workflowPath: STEPS, dbPath, input: { label: "h" }, runId: "high", tenant: "A", priority: 10 });
    const db = openDb(dbPath);
    const stop = new AbortController();
    const worker = new Worker({ db, concurrency: 1, pollIntervalMs: 50, workflows: [{ name: "steps", path: STEPS, workflow: steps }] });
    const done = worker.run(stop.signal);
    await waitFor(async () => (await query<{ status: string }>(dbPath, "SELECT status FROM _smithers_runs WHERE run_id = 'b'"))[0]?.status === "finished");
    stop.abort();
    await done;
    // One run at a time: each started after the one before finished, so start times order them.
    const started = await query<{ run_id: string }>(dbPath, "SELECT run_id FROM _smithers_runs ORDER BY started_at_ms, finished_at_ms");
    const order = started.map((r) => r.run_id);
    expect(order[0]).toBe("high");
    expect(order.slice(1, 3)).toContain("b");
  });
});

describe("Worker and not-before times", () => {
  test("an idle worker whose poll interval is a minute wakes for a debounced request when its quiet period ends, and runs it with the latest input", async () => {
    const dbPath = tempDbPath();
    const db = openDb(dbPath);
    const stop = new AbortController();
    const worker = new Worker({ db, concurrency: 1, pollIntervalMs: 60_000, workflows: [{ name: "steps", path: STEPS, workflow: steps }] });
    const done = worker.run(stop.signal);
    await Bun.sleep(50); // its first pass found nothing: it sleeps for its poll interval unless a not-before time comes sooner
    const start = (label: string) => runWorkflow(steps, { enqueue: true, workflowPath: STEPS, dbPath, input: { label }, debounce: { key: "k", ms: 200 } });
    await start("first");
    // A pass sees the request: at once on PostgreSQL (the start notifies workers), at the next poll on SQLite; here, now.
    worker.nudge();
    const { runId } = await start("latest");
    const statusOf = async () => (await query<{ status: string }>(dbPath, "SELECT status FROM _smithers_runs WHERE run_id = ?", runId))[0]?.status;
    await waitFor(async () => (await statusOf()) === "finished");
    stop.abort();
    await done;
    expect(await statusOf()).toBe("finished");
    expect(await query(dbPath, "SELECT label FROM input WHERE run_id = ?", runId)).toEqual([{ label: "latest" }]);
  });
});

describe("runWorkflow({ enqueue: true }) with queue options", () => {
  test("bad priority, tenant, keys and debounce are refused with INVALID_OPTION and queue nothing", async () => {
    const dbPath = tempDbPath();
    const base = { enqueue: true as const, workflowPath: STEPS, dbPath, input: { label: "x" } };
    const bad = [
      { priority: 1.5 },
      { priority: Number.NaN },
      { tenant: "" },
      { tenant: "  " },
      { idempotencyKey: "" },
      { idempotencyKey: "k".repeat(256) },
      { idempotencyWindowMs: 0 },
      { debounce: { key: "d", ms: 0 } },
      { debounce: { key: "d", ms: -5 } },
      { debounce: { key: "", ms: 5 } },
    ];
    for (const o of bad) expect((await rejection(runWorkflow(steps, { ...base, ...o }))).code).toBe("INVALID_OPTION");
    expect((await rejection(runWorkflow(steps, { ...base, runId: "named", debounce: { key: "d", ms: 5 } }))).code).toBe("INVALID_OPTION");
    expect((await rejection(runWorkflow(steps, { input: { label: "x" }, dbPath, priority: 3 }))).code).toBe("INVALID_OPTION");
    expect(await queue.listWaiting(openDb(dbPath))).toEqual([]);
  });

  test("a debounced burst is one waiting request with the latest input, not claimable before its quiet period ends", async () => {
    const dbPath = tempDbPath();
    const start = (label: string) =>
      runWorkflow(steps, { enqueue: true, workflowPath: STEPS, dbPath, input: { label }, debounce: { key: "sync", ms: 60_000 } });
    const first = await start("one");
    const second = await start("two");
    const third = await start("three");
    expect(first.reused).toBeUndefined();
    expect([second, third]).toEqual([
      { runId: first.runId, status: "queued", reused: "debounce" },
      { runId: first.runId, status: "queued", reused: "debounce" },
    ]);
    const db = openDb(dbPath);
    const waiting = await queue.listWaiting(db);
    expect(waiting.map((r) => [r.runId, r.inputJson, r.debounceKey])).toEqual([[first.runId, '{"label":"three"}', "sync"]]);
    const notBefore = waiting[0]!.notBeforeMs!;
    expect(await queue.claimNext(db, { workerId: "w", nowMs: notBefore - 1, leaseMs: 1_000 })).toBeUndefined();
    expect(await queue.nextNotBefore(db, notBefore - 1)).toBe(notBefore);
    expect((await queue.claimNext(db, { workerId: "w", nowMs: notBefore, leaseMs: 1_000 }))?.runId).toBe(first.runId);
    // Claimed: a start with the key now queues a new run.
    const after = await start("four");
    expect(after.runId).not.toBe(first.runId);
    expect(after.reused).toBeUndefined();
  });

  test("Idempotency-Key repeated 10 times concurrently (10 connections): one run, every start answered with it; another request with the key is IDEMPOTENCY_CONFLICT", async () => {
    const dbPath = tempDbPath();
    await openDb(dbPath).read("warm", () => undefined); // the schema exists before the racers open it
    // Ten handles (ten connections, or pools on PostgreSQL), each admitting its own new run id with the one key.
    const racers = Array.from({ length: 10 }, () => openDb(dbPath));
    const idempotency = { key: "order-42", requestHash: startRequestHash({ workflow: "steps", input: { label: "same" }, tenant: "acme" }), windowMs: 60_000 };
    const admissions = await Promise.all(
      racers.map((db, i) =>
        queue.enqueue(
          db,
          { runId: `racer-${i}`, workflowName: "steps", workflowPath: STEPS, inputJson: '{"label":"same"}', enqueuedAtMs: Date.now(), tenant: "acme" },
          { capacity: 1_000, resume: false, idempotency },
          () => ({ runId: "_", timestampMs: 0, type: "RunRefused", payloadJson: "{}" }),
        ),
      ),
    );
    const starts = admissions.map((a) =>
      a.accepted
        ? { runId: a.runId, reused: undefined }
        : { runId: "runId" in a ? a.runId : "?", reused: a.reason === "replayed" ? "idempotency-key" : a.reason },
    );
    const runIds = new Set(starts.map((s) => s.runId));
    expect(runIds.size).toBe(1);
    expect(starts.filter((s) => s.reused === undefined)).toHaveLength(1);
    expect(starts.filter((s) => s.reused === "idempotency-key")).toHaveLength(9);
    const rows = await query<{ run_id: string }>(dbPath, "SELECT run_id FROM _smithers_queue");
    expect(rows.map((r) => r.run_id)).toEqual([...runIds]);
    const keys = await query<{ key: string; run_id: string }>(dbPath, "SELECT key, run_id FROM _smithers_idempotency");
    expect(keys).toEqual([{ key: "order-42", run_id: [...runIds][0]! }]);
    // Through the library: the same request is the same run; another request with the key is refused.
    const again = await runWorkflow(steps, {
      enqueue: true,
      workflowPath: STEPS,
      dbPath,
      input: { label: "same" },
      idempotencyKey: "order-42",
      tenant: "acme",
    });
    expect(again).toEqual({ runId: [...runIds][0]!, status: "queued", reused: "idempotency-key" });
    const other = await rejection(
      runWorkflow(steps, { enqueue: true, workflowPath: STEPS, dbPath, input: { label: "different" }, idempotencyKey: "order-42", tenant: "acme" }),
    );
    expect(other.code).toBe("IDEMPOTENCY_CONFLICT");
    expect(await query(dbPath, "SELECT run_id FROM _smithers_queue")).toHaveLength(1);
  });
});
