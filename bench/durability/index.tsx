/** @jsxImportSource ../../src/jsx */
/**
 * bench/durability: what `durability: "power"` (synchronous = FULL, an fsync per commit) costs
 * next to "process" (NORMAL) on a WAL file: per-task time of a Sequence of N compute tasks, and
 * per-write time of a side-effect intent (always FULL) next to a plain tool-call row (the
 * mode's level). Median of `runs` repetitions, each on a fresh file. Prints a table; asserts nothing.
 * Usage: bun run bench/durability/index.tsx [tasks=1000] [writes=200] [runs=3]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "../zod.ts"; // our engine's zod, not the peer's copy in bench/node_modules
import { createSmithers, runWorkflow } from "../../src/index.ts";
import { openSmithersDb, toolCalls, type Durability } from "../../src/db/index.ts";
import { markdownTable } from "../markdown-table.ts";
import { sequenceWorkflow } from "../sequence-workflow.tsx";

const MODES: readonly Durability[] = ["process", "power"];

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

async function inTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), "smithers-bench-durability-"));
  try {
    return await fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Wall ms of one run of a Sequence of `n` compute tasks. */
const sequenceMs = (durability: Durability, n: number) =>
  inTempDir(async (dir) => {
    const kit = createSmithers({ step: z.object({ n: z.number().int() }) }, { dbPath: join(dir, "bench.db"), durability });
    const { smithersDb } = kit;
    const wf = sequenceWorkflow(kit, n, "bench-durability");
    const started = performance.now();
    const result = await runWorkflow(wf, { input: {} });
    const ms = performance.now() - started;
    if (result.status !== "finished") throw new Error(`bench/durability run ${result.status}: ${result.error?.message}`);
    await smithersDb.close();
    return ms;
  });

/** Mean ms per startToolCall over `n` calls, as side-effect intents or as plain tool calls. */
const toolCallMs = (durability: Durability, n: number, sideEffect: boolean) =>
  inTempDir(async (dir) => {
    const db = openSmithersDb(join(dir, "bench.db"), { durability });
    try {
      const started = performance.now();
      for (let i = 0; i < n; i++) {
        await toolCalls.startToolCall(db, {
          runId: "bench",
          nodeId: "pay",
          attempt: 1,
          toolName: `call-${i}`,
          input: { i },
          startedAtMs: Date.now(),
          sideEffect,
          idempotencyKey: sideEffect ? `bench:pay:0:call-${i}` : null,
        });
      }
      return (performance.now() - started) / n;
    } finally {
      await db.close();
    }
  });

export type DurabilityRow = { mode: Durability; sequenceMs: number; perTaskMs: number; intentMs: number; plainMs: number };

export async function measureDurability(tasks = 1_000, writes = 200, runs = 3): Promise<DurabilityRow[]> {
  const rows: DurabilityRow[] = [];
  for (const mode of MODES) {
    const seq: number[] = [];
    const intent: number[] = [];
    const plain: number[] = [];
    for (let r = 0; r < runs; r++) {
      seq.push(await sequenceMs(mode, tasks));
      intent.push(await toolCallMs(mode, writes, true));
      plain.push(await toolCallMs(mode, writes, false));
    }
    const ms = median(seq);
    rows.push({ mode, sequenceMs: ms, perTaskMs: ms / tasks, intentMs: median(intent), plainMs: median(plain) });
  }
  return rows;
}

export async function runDurabilityBench(args: string[] = []): Promise<void> {
  const [tasks = 1_000, writes = 200, runs = 3] = args.map(Number);
  const rows = await measureDurability(tasks, writes, runs);
  console.log(`\nbench/durability: process (synchronous NORMAL) vs power (FULL), WAL file, Bun ${Bun.version}, median of ${runs}\n`);
  console.log(
    markdownTable(
      ["durability", `Sequence of ${tasks} ms`, "ms/task", "side-effect intent ms/write", "plain tool-call row ms/write"],
      rows.map((r) => [r.mode, r.sequenceMs.toFixed(0), r.perTaskMs.toFixed(3), r.intentMs.toFixed(3), r.plainMs.toFixed(3)]),
    ),
  );
}

if (import.meta.main) await runDurabilityBench(process.argv.slice(2));
