/** @jsxImportSource ../../src/jsx */
/**
 * bench/frames: what `_smithers_frames` costs and how fast a frame comes back. A real
 * runWorkflow of a Sequence of N static tasks (one task changes state per frame), and of a Loop
 * of one task for N iterations (bench/compare's loop shape: two frames per iteration), under each
 * keyframe policy, then, from the stored rows: bytes per delta frame against bytes per full
 * frame, total frame bytes, frame/keyframe counts, and readFrame time for random frames, cold
 * (clearFrameCache first, so the chain is rebuilt from SQLite) and warm (the same frames again,
 * from the LRU). Then the same frames through FrameChain alone (no engine): what appending a
 * frame and inserting its row cost, for a delta and for a keyframe. Prints tables; asserts nothing.
 * Usage: bun run bench/frames/index.tsx [sizes=1000,10000]
 */
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "../zod.ts"; // our engine's zod, not the peer's copy in bench/node_modules
import { createSmithers, runWorkflow } from "../../src/index.ts";
import { frames, openSmithersDb } from "../../src/db/index.ts";
import { clearFrameCache, FrameChain, readFrame, type KeyframePolicy } from "../../src/engine/index.ts";
import type { FrameDelta, XmlElement } from "../../src/codec/index.ts";
import { markdownTable } from "../markdown-table.ts";
import { sequenceWorkflow } from "../sequence-workflow.tsx";

const RUN_ID = "bench-frames";
const READS = 20;

type Mode = KeyframePolicy["mode"];
type Shape = "sequence" | "loop";
type FrameStat = { frameNo: number; encoding: string; bytes: number };
export type FramesResult = {
  shape: Shape;
  tasks: number;
  mode: Mode;
  runMs: number;
  frames: number;
  keyframes: number;
  fullBytes: number;
  deltaMedian: number;
  deltaMax: number;
  totalBytes: number;
  coldMedianMs: number;
  coldMaxMs: number;
  warmMedianMs: number;
  longestChain: number;
};

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** Deterministic picks, so both policies read the same frames. */
function pickFrames(count: number, frames: number, seed = 42): number[] {
  let x = seed >>> 0;
  const next = () => (x = (Math.imul(x, 1_664_525) + 1_013_904_223) >>> 0) / 2 ** 32;
  const picked = new Set<number>();
  while (picked.size < Math.min(count, frames)) picked.add(Math.floor(next() * frames));
  return [...picked];
}

/** One task in a Loop for `iterations` iterations: each iteration re-mounts the same body. */
function loopWorkflow(kit: ReturnType<typeof createSmithers<{ step: ReturnType<typeof stepSchema> }>>, iterations: number) {
  const { Workflow, Task, Loop, smithers, outputs } = kit;
  return smithers((ctx) => (
    <Workflow name="bench-frames-loop">
      <Loop id="l" until={ctx.iterationCount(outputs.step, "t") >= iterations} maxIterations={iterations}>
        <Task id="t" output={outputs.step}>
          {{ n: ctx.iterationCount(outputs.step, "t") }}
        </Task>
      </Loop>
    </Workflow>
  ));
}

const stepSchema = () => z.object({ n: z.number().int() });

async function measure(shape: Shape, tasks: number, mode: Mode): Promise<FramesResult> {
  const dir = mkdtempSync(join(tmpdir(), "smithers-bench-frames-"));
  const dbPath = join(dir, "bench.db");
  try {
    const kit = createSmithers({ step: stepSchema() }, { dbPath });
    const wf = shape === "loop" ? loopWorkflow(kit, tasks) : sequenceWorkflow(kit, tasks, "bench-frames");
    const started = performance.now();
    const result = await runWorkflow(wf, { runId: RUN_ID, keyframes: { mode } });
    const runMs = performance.now() - started;
    if (result.status !== "finished") throw new Error(`bench run ${result.status}: ${result.error?.message}`);

    const sqlite = new Database(dbPath, { readonly: true });
    const rows = sqlite
      .query("SELECT frame_no AS frameNo, encoding, length(CAST(xml_json AS BLOB)) AS bytes FROM _smithers_frames WHERE run_id = ? ORDER BY frame_no")
      .all(RUN_ID) as FrameStat[];
    sqlite.close();
    const deltas = rows.filter((r) => r.encoding === "delta").map((r) => r.bytes);
    const starts = rows.filter((r) => r.encoding !== "delta");
    // Chain length a cold read of frame f replays: f minus the chain start at or before it.
    let lastStart = 0;
    const chainLen = rows.map((r) => {
      if (r.encoding !== "delta") lastStart = r.frameNo;
      return r.frameNo - lastStart;
    });

    const db = openSmithersDb(dbPath);
    const picks = pickFrames(READS, rows.length);
    clearFrameCache();
    const cold: number[] = [];
    for (const f of picks) {
      const t = performance.now();
      await readFrame(db, RUN_ID, f);
      cold.push(performance.now() - t);
    }
    const warm: number[] = [];
    for (const f of picks) {
      const t = performance.now();
      await readFrame(db, RUN_ID, f);
      warm.push(performance.now() - t);
    }
    await db.close();
    clearFrameCache();

    return {
      shape,
      tasks,
      mode,
      runMs,
      frames: rows.length,
      keyframes: starts.length,
      fullBytes: rows[0]?.bytes ?? 0,
      deltaMedian: median(deltas),
      deltaMax: Math.max(...deltas),
      totalBytes: rows.reduce((n, r) => n + r.bytes, 0),
      coldMedianMs: median(cold),
      coldMaxMs: Math.max(...cold),
      warmMedianMs: median(warm),
      longestChain: Math.max(...chainLen),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export type ChainResult = {
  tasks: number;
  mode: Mode;
  frames: number;
  keyframes: number;
  totalBytes: number;
  deltaAppendUs: number;
  keyframeAppendMs: number;
  deltaInsertUs: number;
  keyframeInsertMs: number;
  totalMs: number;
};

/**
 * The same history without the engine: the tree the run records (a workflow > sequence > N tasks),
 * then per frame the delta the recorder builds (task k-1 finished, task k running), appended to a
 * FrameChain and its row inserted in a transaction of its own.
 */
async function measureChain(tasks: number, mode: Mode): Promise<ChainResult> {
  const dir = mkdtempSync(join(tmpdir(), "smithers-bench-frames-chain-"));
  const db = openSmithersDb(join(dir, "bench.db"));
  try {
    const task = (i: number): XmlElement => ({
      tag: "task",
      props: { id: `t${i}`, iteration: 0, state: i === 0 ? "running" : "pending", output: "step", mode: "compute" },
      children: [],
    });
    const tree: XmlElement = {
      tag: "workflow",
      props: { name: "bench-frames" },
      children: [{ tag: "sequence", props: {}, children: Array.from({ length: tasks }, (_, i) => task(i)) }],
    };
    const chain = await FrameChain.open(db, RUN_ID, { interval: 50, mode });
    const appendUs: Record<string, number[]> = { delta: [], keyframe: [] };
    const insertUs: Record<string, number[]> = { delta: [], keyframe: [] };
    let count = 0;
    let keyframes = 0;
    let totalBytes = 0;
    const started = performance.now();
    for (let k = 0; k <= tasks; k++) {
      const next: XmlElement | FrameDelta =
        k === 0
          ? tree
          : [
              { op: "set", path: [0, k - 1], name: "state", value: "finished" },
              ...(k < tasks ? [{ op: "set" as const, path: [0, k], name: "state", value: "running" }] : []),
            ];
      let t = performance.now();
      const row = chain.append(next, Date.now());
      const appended = performance.now() - t;
      if (!row) continue;
      t = performance.now();
      await db.withTransaction("benchFrame", (d) => frames.insertFrame(d, row));
      const inserted = performance.now() - t;
      const kind = row.encoding === "delta" ? "delta" : "keyframe";
      appendUs[kind]!.push(appended * 1000);
      insertUs[kind]!.push(inserted * 1000);
      count++;
      if (kind === "keyframe") keyframes++;
      totalBytes += Buffer.byteLength(row.body);
    }
    const totalMs = performance.now() - started;
    const keyframeRows = (xs: number[]) => xs.slice(1); // frame 0 (the full frame) pays warm-up costs
    return {
      tasks,
      mode,
      frames: count,
      keyframes,
      totalBytes,
      deltaAppendUs: median(appendUs.delta!),
      keyframeAppendMs: keyframeRows(appendUs.keyframe!).length ? median(keyframeRows(appendUs.keyframe!)) / 1000 : Number.NaN,
      deltaInsertUs: median(insertUs.delta!),
      keyframeInsertMs: keyframeRows(insertUs.keyframe!).length ? median(keyframeRows(insertUs.keyframe!)) / 1000 : Number.NaN,
      totalMs,
    };
  } finally {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const kb = (n: number) =>
  n >= 10 * 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(0)} MB` : n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)} MB` : `${(n / 1024).toFixed(1)} KB`;
const ms = (n: number) => (n < 0.1 ? n.toFixed(3) : n < 10 ? n.toFixed(2) : n.toFixed(0));

function table(header: string[], rows: string[][]): void {
  console.log(markdownTable(header, rows));
}

export async function runFramesBench(sizes = [1_000, 10_000]): Promise<void> {
  const results: FramesResult[] = [];
  for (const shape of ["sequence", "loop"] as const)
    for (const tasks of sizes) for (const mode of ["adaptive", "fixed"] as const) results.push(await measure(shape, tasks, mode));

  console.log(
    `\nbench/frames: a Sequence of N static tasks (one task state change per frame) and a Loop of one task for N iterations (WAL file, Bun ${Bun.version})\n`,
  );
  table(
    [
      "shape",
      "tasks",
      "policy",
      "run s",
      "frames",
      "keyframes",
      "full frame",
      "delta median",
      "delta max",
      "total frame bytes",
      "if every frame full",
      "longest chain",
      "cold read median ms",
      "cold read max ms",
      "warm read median ms",
    ],
    results.map((r) => [
      r.shape,
      r.tasks.toLocaleString("en-US"),
      r.mode === "adaptive" ? "adaptive (default)" : "fixed (every 50th)",
      (r.runMs / 1000).toFixed(1),
      r.frames.toLocaleString("en-US"),
      String(r.keyframes),
      `${r.fullBytes.toLocaleString("en-US")} B`,
      `${r.deltaMedian} B`,
      `${r.deltaMax} B`,
      kb(r.totalBytes),
      kb(r.fullBytes * r.frames),
      String(r.longestChain),
      ms(r.coldMedianMs),
      ms(r.coldMaxMs),
      ms(r.warmMedianMs),
    ]),
  );
  console.log(`\nReads: ${READS} random frames of each run (the same numbers for both policies), cold after clearFrameCache(), then warm from the LRU.`);
  console.log('"longest chain": the most deltas a cold read has to replay after its keyframe.');

  const chained: ChainResult[] = [];
  for (const tasks of sizes) for (const mode of ["adaptive", "fixed"] as const) chained.push(await measureChain(tasks, mode));
  console.log("\nThe same frames through FrameChain.append + frames.insertFrame alone (no engine), one transaction per frame:\n");
  table(
    [
      "tasks",
      "policy",
      "frames",
      "keyframes",
      "total frame bytes",
      "delta append µs",
      "keyframe append ms",
      "delta insert µs",
      "keyframe insert ms",
      "all frames ms",
    ],
    chained.map((r) => [
      r.tasks.toLocaleString("en-US"),
      r.mode === "adaptive" ? "adaptive (default)" : "fixed (every 50th)",
      r.frames.toLocaleString("en-US"),
      String(r.keyframes),
      kb(r.totalBytes),
      ms(r.deltaAppendUs),
      Number.isNaN(r.keyframeAppendMs) ? "-" : ms(r.keyframeAppendMs),
      ms(r.deltaInsertUs),
      Number.isNaN(r.keyframeInsertMs) ? "-" : ms(r.keyframeInsertMs),
      r.totalMs.toFixed(0),
    ]),
  );
  console.log('\nMedians per frame; keyframe columns leave out frame 0 (the full frame), "-" when the run has no other.');
}

if (import.meta.main) await runFramesBench(process.argv[2] ? process.argv[2].split(",").map(Number) : undefined);
