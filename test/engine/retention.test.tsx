/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { statSync } from "node:fs";
import { z } from "zod";
import { events, openSmithersDb, type SmithersDb } from "../../src/db/index.ts";
import { clearFrameCache, readFrameXml, SERVER_RUN_ID } from "../../src/engine/index.ts";
import { createSmithers, pruneRuns, runWorkflow } from "../../src/index.ts";
import { execute, onPostgres, query, tempDbPath } from "../helpers.ts";

const DAY = 86_400_000;
/** Far enough ahead that every run of the test ended more than 7 days before it. */
const later = () => Date.now() + 8 * DAY;

/** A loop of `iterations` steps (one frame or more each), then a final task that fails while `behaviour.fail`. */
function looping(dbPath: string, iterations: number, behaviour = { fail: false }) {
  const { Workflow, Task, Loop, Sequence, smithers, outputs } = createSmithers({ step: z.object({ n: z.number(), note: z.string() }) }, { dbPath });
  return smithers((ctx) => (
    <Workflow name="retention">
      <Sequence>
        <Loop id="l" until={false} maxIterations={iterations}>
          <Task id="s" output={outputs.step}>
            {async () => ({ n: ctx.iteration, note: `step ${ctx.iteration} `.repeat(20) })}
          </Task>
        </Loop>
        <Task id="final" output={outputs.step} noRetry>
          {async () => {
            if (behaviour.fail) throw new Error("final is broken");
            return { n: -1, note: "done" };
          }}
        </Task>
      </Sequence>
    </Workflow>
  ));
}

const lastFrameNo = async (dbPath: string, runId: string) =>
  (await query<{ n: number }>(dbPath, "SELECT max(frame_no) n FROM _smithers_frames WHERE run_id = ?", runId))[0]!.n;
const rowsOf = (dbPath: string, table: string, runId: string) => query(dbPath, `SELECT * FROM ${table} WHERE run_id = ? ORDER BY 2, 3`, runId);
/** The frames and events of each run in `runIds`. */
const historyOf = (dbPath: string, runIds: string[]) =>
  Promise.all(runIds.map(async (id) => [await rowsOf(dbPath, "_smithers_frames", id), await rowsOf(dbPath, "_smithers_events", id)]));
const fileBytes = (dbPath: string) => statSync(dbPath).size + (statSync(`${dbPath}-wal`, { throwIfNoEntry: false })?.size ?? 0);

async function withDb<T>(dbPath: string, fn: (db: SmithersDb) => Promise<T>): Promise<T> {
  const db = openSmithersDb(dbPath);
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

async function framesXml(dbPath: string, runId: string, frameNos: number[]): Promise<string[]> {
  clearFrameCache(); // read from the rows, not from the cache
  return withDb(dbPath, (db) => Promise.all(frameNos.map((n) => readFrameXml(db, runId, n))));
}

describe("pruneRuns", () => {
  test("an old finished run keeps frame 0, its last frame and every output row, and VACUUM shrinks the file", async () => {
    const dbPath = tempDbPath();
    const wf = looping(dbPath, 60);
    const run = await runWorkflow(wf, { input: {} });
    expect(run.status).toBe("finished");
    const last = await lastFrameNo(dbPath, run.runId);
    expect(last).toBeGreaterThan(60);
    const outputsBefore = await query(dbPath, "SELECT * FROM step ORDER BY node_id, iteration");
    expect(outputsBefore).toHaveLength(61);
    const xmlBefore = await framesXml(dbPath, run.runId, [0, last]);
    const eventsBefore = await query<{ seq: number; type: string }>(dbPath, "SELECT seq, type FROM _smithers_events WHERE run_id = ? ORDER BY seq", run.runId);
    await withDb(dbPath, (db) => db.checkpoint(0)); // the WAL folded in: the file alone holds the run
    // File sizes are SQLite's: one file and its WAL. PostgreSQL reports its whole database's size, which VACUUM need not shrink.
    const bytesBefore = onPostgres ? undefined : fileBytes(dbPath);
    if (bytesBefore !== undefined) expect(bytesBefore).toBe(statSync(dbPath).size);

    const report = await withDb(dbPath, (db) => pruneRuns(db, { nowMs: later(), vacuum: true }));

    expect(report.runs).toEqual([
      {
        runId: run.runId,
        status: "finished",
        framesRemoved: last - 1,
        eventsRemoved: eventsBefore.length - 2,
        rowBytes: report.rowBytes,
        lastFrameRewritten: true,
      },
    ]);
    expect(report.vacuumed).toBe(true);
    if (bytesBefore !== undefined) {
      expect(report.fileBytesBefore).toBe(bytesBefore);
      expect(report.fileBytesAfter).toBe(fileBytes(dbPath));
      expect(report.fileBytesAfter).toBe(statSync(dbPath).size);
      expect(report.fileBytesAfter).toBeLessThan(report.fileBytesBefore);
      expect(report.bytesFreed).toBe(report.fileBytesBefore - report.fileBytesAfter);
    }
    expect(await query(dbPath, "SELECT frame_no, encoding FROM _smithers_frames WHERE run_id = ? ORDER BY frame_no", run.runId)).toEqual([
      { frame_no: 0, encoding: "full" },
      { frame_no: last, encoding: "keyframe" },
    ]);
    expect(await framesXml(dbPath, run.runId, [0, last])).toEqual(xmlBefore);
    expect(await query(dbPath, "SELECT * FROM step ORDER BY node_id, iteration")).toEqual(outputsBefore);
    expect(await query(dbPath, "SELECT seq, type FROM _smithers_events WHERE run_id = ? ORDER BY seq", run.runId)).toEqual([
      eventsBefore[0]!,
      eventsBefore.at(-1)!,
    ]);
  });

  test("running, waiting and recently ended runs are left byte for byte", async () => {
    const dbPath = tempDbPath();
    const wf = looping(dbPath, 5);
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await runWorkflow(wf, { input: {} })).runId);
    const [running, waiting, recent, old] = ids as [string, string, string, string];
    const nowMs = later();
    await execute(dbPath, "UPDATE _smithers_runs SET status = 'running', finished_at_ms = NULL WHERE run_id = ?", running);
    await execute(dbPath, "UPDATE _smithers_runs SET status = 'waiting-timer' WHERE run_id = ?", waiting);
    await execute(dbPath, "UPDATE _smithers_runs SET finished_at_ms = ? WHERE run_id = ?", nowMs - DAY, recent);
    const kept = [running, waiting, recent];
    const before = await historyOf(dbPath, kept);

    const report = await withDb(dbPath, (db) => pruneRuns(db, { nowMs, olderThanMs: 2 * DAY }));

    expect(report.runs.map((r) => r.runId)).toEqual([old]);
    expect(await historyOf(dbPath, kept)).toEqual(before);
  });

  test("a dry run reports what a prune removes and changes nothing", async () => {
    const dbPath = tempDbPath();
    const wf = looping(dbPath, 20);
    await runWorkflow(wf, { input: {} });
    await runWorkflow(wf, { input: {} });
    const snapshot = async () => [
      await query(dbPath, "SELECT * FROM _smithers_frames ORDER BY 1, 2"),
      await query(dbPath, "SELECT * FROM _smithers_events ORDER BY 1, 2"),
    ];
    const before = await snapshot();
    const nowMs = later();

    const dry = await withDb(dbPath, (db) => pruneRuns(db, { nowMs, dryRun: true, vacuum: true }));
    expect(await snapshot()).toEqual(before);
    expect(dry.dryRun).toBe(true);
    expect(dry.vacuumed).toBe(false);
    expect(dry.runs).toHaveLength(2);
    expect(dry.framesRemoved).toBeGreaterThan(0);

    const real = await withDb(dbPath, (db) => pruneRuns(db, { nowMs }));
    expect(real.runs).toEqual(dry.runs);
    // Freed bytes are SQLite's free-list pages; PostgreSQL reports none (freed space is reused inside each table).
    if (!onPostgres) expect(real.bytesFreed).toBeGreaterThan(0);
    expect(real.bytesFreed).toBe(real.freeBytes - dry.freeBytes);
  });

  test("pruning again removes nothing more", async () => {
    const dbPath = tempDbPath();
    const run = await runWorkflow(looping(dbPath, 10), { input: {} });
    await withDb(dbPath, (db) => pruneRuns(db, { nowMs: later() }));
    const rows = await historyOf(dbPath, [run.runId]);

    const again = await withDb(dbPath, (db) => pruneRuns(db, { nowMs: later() }));

    expect(again.runs).toEqual([]);
    expect(await historyOf(dbPath, [run.runId])).toEqual(rows);
  });

  test("a failed run pruned and then resumed finishes and numbers its new events after the old ones", async () => {
    const dbPath = tempDbPath();
    const behaviour = { fail: true };
    const wf = looping(dbPath, 30, behaviour);
    const first = await runWorkflow(wf, { input: {} });
    expect(first.status).toBe("failed");
    const lastSeq = (await query<{ s: number }>(dbPath, "SELECT max(seq) s FROM _smithers_events WHERE run_id = ?", first.runId))[0]!.s;
    const lastBefore = await lastFrameNo(dbPath, first.runId);
    const report = await withDb(dbPath, (db) => pruneRuns(db, { nowMs: later() }));
    expect(report.runs.map((r) => r.status)).toEqual(["failed"]);

    behaviour.fail = false;
    const second = await runWorkflow(wf, { runId: first.runId, resume: true });

    expect(second.status).toBe("finished");
    const seqs = (await query<{ seq: number }>(dbPath, "SELECT seq FROM _smithers_events WHERE run_id = ? ORDER BY seq", first.runId)).map((r) => r.seq);
    expect(seqs.slice(0, 2)).toEqual([0, lastSeq]);
    expect(seqs.slice(2)).toEqual(Array.from({ length: seqs.length - 2 }, (_, i) => lastSeq + 1 + i));
    const lastAfter = await lastFrameNo(dbPath, first.runId);
    expect(lastAfter).toBeGreaterThan(lastBefore);
    const [xml] = await framesXml(dbPath, first.runId, [lastAfter]);
    expect(xml).toContain('id="final"');
    expect(await query(dbPath, "SELECT n FROM step WHERE node_id = 'final'")).toEqual([{ n: -1 }]);
  });
});

describe("output storage", () => {
  test("a large output is stored once, in its row: frames and events stay small", async () => {
    const dbPath = tempDbPath();
    const big = "x".repeat(1 << 20);
    const { Workflow, Task, smithers, outputs } = createSmithers({ blob: z.object({ text: z.string() }) }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="big">
        <Task id="make" output={outputs.blob}>
          {async () => ({ text: big })}
        </Task>
      </Workflow>
    ));
    const run = await runWorkflow(wf, { input: {} });
    expect(run.status).toBe("finished");
    expect(await query(dbPath, "SELECT length(text) n FROM blob")).toEqual([{ n: big.length }]);
    const frameBytes = (await query<{ n: number }>(dbPath, "SELECT coalesce(sum(length(xml_json)), 0) n FROM _smithers_frames"))[0]!.n;
    const eventBytes = (await query<{ n: number }>(dbPath, "SELECT coalesce(sum(length(payload_json)), 0) n FROM _smithers_events"))[0]!.n;
    expect(frameBytes).toBeLessThan(10_000);
    expect(eventBytes).toBeLessThan(10_000);
  });
});

test("the server's old refusal events (pseudo-run _server) go by age; recent ones stay", async () => {
  const dbPath = tempDbPath();
  const db = openSmithersDb(dbPath);
  const nowMs = Date.now();
  const day = 24 * 60 * 60 * 1000;
  await events.insertEvents(db, [
    { runId: SERVER_RUN_ID, timestampMs: nowMs - 10 * day, type: "RunRefused", payloadJson: "{}" },
    { runId: SERVER_RUN_ID, timestampMs: nowMs - 9 * day, type: "RunRefused", payloadJson: '{"n":2}' },
    { runId: SERVER_RUN_ID, timestampMs: nowMs - 1000, type: "RunRefused", payloadJson: '{"n":3}' },
  ]);
  expect((await pruneRuns(db, { olderThanMs: 7 * day, dryRun: true, nowMs })).eventsRemoved).toBe(2);
  expect((await pruneRuns(db, { olderThanMs: 7 * day, nowMs })).eventsRemoved).toBe(2);
  expect(await query(dbPath, "SELECT payload_json FROM _smithers_events")).toEqual([{ payload_json: '{"n":3}' }]);
  await db.close();
});
