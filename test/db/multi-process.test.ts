/**
 * Four Bun processes write events and signals to one WAL database file at the same time. SQLite's
 * file lock plus MAX+1 inside BEGIN IMMEDIATE must leave every run's seqs gap-free with no
 * duplicates, and the busy timeout plus retry policy must absorb all contention.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { asc } from "drizzle-orm";
import { insertRun } from "../../src/db/adapters/runs.ts";
import { SmithersDb, smithersEvents, smithersSignals } from "../../src/db/index.ts";
import { removeTempDirs, tempDbPath } from "./backends.ts";

const WORKERS = 4;
const EVENTS = 200;
const SIGNALS = 50;
const RUN_IDS = ["r0", "r1", "r2"];
const WORKER = join(import.meta.dir, "fixtures", "concurrent-writer.ts");

afterEach(removeTempDirs);

function seqsByRun(rows: { runId: string; seq: number }[]): Map<string, number[]> {
  const byRun = new Map<string, number[]>();
  for (const row of rows) byRun.set(row.runId, [...(byRun.get(row.runId) ?? []), row.seq]);
  return byRun;
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

type WorkerSummary = { workerId: string; claimed: boolean; retries: number };

/** Starts the workers, releases them together, and returns their summaries (all must exit 0). */
async function runWorkers(path: string, events: number, signals: number): Promise<WorkerSummary[]> {
  const barrier = dirname(path);
  const procs = range(WORKERS).map((id) =>
    Bun.spawn([process.execPath, WORKER, path, String(id), String(events), String(signals), RUN_IDS.join(","), barrier], { stdout: "pipe", stderr: "pipe" }),
  );
  while (!range(WORKERS).every((id) => existsSync(join(barrier, `ready-${id}`)))) await Bun.sleep(5);
  writeFileSync(join(barrier, "go"), "");
  const results = await Promise.all(
    procs.map(async (proc) => ({
      code: await proc.exited,
      stdout: await new Response(proc.stdout).text(),
      stderr: await new Response(proc.stderr).text(),
    })),
  );
  for (const r of results) expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
  return results.map((r) => JSON.parse(r.stdout) as WorkerSummary);
}

describe("SmithersDb", () => {
  test("four processes writing one WAL file at once leave gap-free, duplicate-free seqs and one claim winner", async () => {
    const path = tempDbPath();
    const setup = new SmithersDb(path);
    await insertRun(setup, {
      runId: "stale-run",
      workflowName: "wf",
      status: "running",
      createdAtMs: 0,
      heartbeatAtMs: 0,
      runtimeOwnerId: "dead-owner",
    });
    await setup.close();

    const summaries = await runWorkers(path, EVENTS, SIGNALS);
    expect(summaries.filter((s) => s.claimed)).toHaveLength(1);

    const db = new SmithersDb(path);
    try {
      const events = db.db.select().from(smithersEvents).orderBy(asc(smithersEvents.runId), asc(smithersEvents.seq)).all();
      expect(events).toHaveLength(WORKERS * EVENTS);
      expect(new Set(events.map((e) => e.payloadJson)).size).toBe(events.length);
      for (const [runId, seqs] of seqsByRun(events)) {
        const expected = RUN_IDS.indexOf(runId) < EVENTS % RUN_IDS.length ? Math.ceil(EVENTS / 3) : Math.floor(EVENTS / 3);
        expect({ runId, seqs }).toEqual({ runId, seqs: range(expected * WORKERS) });
      }

      const signals = db.db.select().from(smithersSignals).orderBy(asc(smithersSignals.runId), asc(smithersSignals.seq)).all();
      expect(signals).toHaveLength(WORKERS * SIGNALS);
      expect(new Set(signals.map((s) => s.payloadJson)).size).toBe(signals.length);
      for (const [runId, seqs] of seqsByRun(signals)) expect({ runId, seqs }).toEqual({ runId, seqs: range(seqs.length) });
    } finally {
      await db.close();
    }
  });

  test("four processes creating the same new database file at once all open it and write", async () => {
    const path = tempDbPath();
    const summaries = await runWorkers(path, 30, 5);
    expect(summaries.map((s) => s.claimed)).toEqual([false, false, false, false]);
    const db = new SmithersDb(path);
    try {
      const events = db.db.select().from(smithersEvents).orderBy(asc(smithersEvents.runId), asc(smithersEvents.seq)).all();
      expect(events).toHaveLength(WORKERS * 30);
      for (const [runId, seqs] of seqsByRun(events)) expect({ runId, seqs }).toEqual({ runId, seqs: range(40) });
    } finally {
      await db.close();
    }
  });
});
