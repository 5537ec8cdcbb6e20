/**
 * Two processes on one queue: a `smithers worker` that holds a claim (its workflow is still
 * loading) and a server started on the same database meanwhile. The server leaves a live claim
 * alone; it takes a claim only once its lease ran out (the worker was killed with -9).
 */
import { afterEach, describe, expect, test } from "bun:test";
import { resolve } from "node:path";
import { openSmithersDb, queue, runs, type SmithersDb } from "../../src/db/index.ts";
import { createServer, type SmithersServer } from "../../src/server/index.ts";
import slowLoad from "../fixtures/slow-load.tsx";
import { onPostgres, sql, tempDbPath, waitFor } from "../helpers.ts";
import { startUntil } from "./cli-helpers.ts";

const SLOW_LOAD = resolve("test/fixtures/slow-load.tsx");

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function openDb(path: string): SmithersDb {
  const db = openSmithersDb(path);
  cleanups.push(() => db.close());
  return db;
}

async function enqueue(db: SmithersDb, runId: string): Promise<void> {
  const admission = await queue.enqueue(
    db,
    { runId, workflowName: "slow-load", workflowPath: SLOW_LOAD, inputJson: null, enqueuedAtMs: Date.now() },
    { capacity: 10, resume: false },
    () => ({ runId: "_", timestampMs: 0, type: "RunRefused", payloadJson: "{}" }),
  );
  expect(admission).toEqual({ accepted: true, runId, debounced: false });
}

/** `smithers worker` on `dbPath` whose workflow takes `loadMs` to load; resolves with the process and its worker id. */
async function startWorkerProcess(dbPath: string, lease: string, loadMs: number) {
  const proc = await startUntil(["worker", "--db", dbPath, "--lease", lease, "--poll-interval", "100ms", "--quiet"], { SLOW_LOAD_MS: String(loadMs) }, " on ");
  cleanups.push(async () => {
    proc.kill(9);
    await proc.exited;
  });
  return proc;
}

/** A server on `dbPath` executing slow-load runs (it loaded the workflow at start, at once). */
async function startServer(dbPath: string): Promise<{ server: SmithersServer; errors: string[] }> {
  const errors: string[] = [];
  const server = await createServer({
    dbPath,
    workflows: [{ name: "slow-load", path: SLOW_LOAD, workflow: slowLoad }],
    maxConcurrent: 2,
    onError: (runId, error) => errors.push(`${runId}: ${String(error)}`),
  });
  await server.start({ port: 0 });
  cleanups.push(() => server.stop());
  return { server, errors };
}

const ranBy = (dbPath: string, runId: string) => sql<{ pid: number }>(dbPath, "SELECT pid FROM done WHERE run_id = ?", runId)[0]?.pid;

describe.skipIf(onPostgres)("two processes on one queue", () => {
  test("a server started while a worker holds a claim leaves it alone: the worker runs the request, the server never does", async () => {
    const dbPath = tempDbPath();
    const db = openDb(dbPath);
    await enqueue(db, "c1");
    const worker = await startWorkerProcess(dbPath, "30s", 3_000);
    let claim: queue.QueueRow | undefined;
    await waitFor(async () => Boolean((claim = await queue.getRequest(db, "c1"))?.claimedBy));
    const { errors } = await startServer(dbPath);
    await Bun.sleep(1_500); // the server's first passes, while the worker's workflow still loads
    const still = await queue.getRequest(db, "c1");
    expect(still?.claimedBy).toBe(claim!.claimedBy);
    expect(still?.leaseExpiresAtMs).toBeGreaterThanOrEqual(claim!.leaseExpiresAtMs!);
    expect(await runs.getRun(db, "c1")).toBeUndefined();
    await waitFor(async () => (await runs.getRun(db, "c1"))?.status === "finished", 15_000);
    expect(ranBy(dbPath, "c1")).toBe(worker.pid);
    expect(errors).toEqual([]);
  }, 30_000);

  test("a claim whose worker was killed is taken by a server once its lease ran out, not before, and runs there once", async () => {
    const dbPath = tempDbPath();
    const db = openDb(dbPath);
    await enqueue(db, "c2");
    const worker = await startWorkerProcess(dbPath, "3s", 60_000);
    await waitFor(async () => Boolean((await queue.getRequest(db, "c2"))?.claimedBy));
    worker.kill(9);
    await worker.exited;
    const claim = await queue.getRequest(db, "c2"); // its lease as the worker last renewed it
    const { errors } = await startServer(dbPath);
    await waitFor(async () => (await runs.getRun(db, "c2"))?.status === "finished", 15_000);
    const run = await runs.getRun(db, "c2");
    // The dead worker's lease had run out before the server created the run.
    expect(run!.createdAtMs).toBeGreaterThanOrEqual(claim!.leaseExpiresAtMs!);
    expect(ranBy(dbPath, "c2")).toBe(process.pid);
    expect(errors).toEqual([]);
  }, 30_000);
});
