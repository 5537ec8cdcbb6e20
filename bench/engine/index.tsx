/** @jsxImportSource ../../src/jsx */
/**
 * bench/engine: end-to-end task throughput of runWorkflow on a WAL file: N compute tasks in a
 * Sequence and in a Parallel, each task a full durable step (node + attempt rows before, output
 * row + states after, events journaled). Run: `bun run bench/engine/index.tsx [n]`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "../zod.ts"; // our engine's zod, not the peer's copy in bench/node_modules
import { createSmithers, runWorkflow } from "../../src/index.ts";
import { sequenceWorkflow } from "../sequence-workflow.tsx";

async function measure(shape: "sequence" | "parallel", n: number) {
  const dir = mkdtempSync(join(tmpdir(), "smithers-bench-engine-"));
  const wf = sequenceWorkflow(createSmithers({ step: z.object({ n: z.number().int() }) }, { dbPath: join(dir, "bench.db") }), n, `bench-${shape}`, shape);
  const started = performance.now();
  const result = await runWorkflow(wf, { input: {}, maxConcurrency: shape === "parallel" ? 16 : undefined });
  const ms = performance.now() - started;
  if (result.status !== "finished") throw new Error(`bench run ${result.status}: ${result.error?.message}`);
  rmSync(dir, { recursive: true, force: true });
  return { shape, tasks: n, ms, perSecond: (n / ms) * 1000 };
}

export async function runEngineBench(n = 300): Promise<void> {
  const rows = [await measure("sequence", n), await measure("parallel", n)];
  console.log(`\nbench/engine: durable tasks per second (WAL file, Bun ${Bun.version})\n`);
  console.log("| shape                        | tasks | total ms | tasks/s | ms/task |");
  console.log("|------------------------------|-------|----------|---------|---------|");
  for (const r of rows) {
    const label = r.shape === "sequence" ? "Sequence (one at a time)" : "Parallel (maxConcurrency 16)";
    console.log(
      `| ${label.padEnd(28)} | ${String(r.tasks).padStart(5)} | ${r.ms.toFixed(0).padStart(8)} | ${r.perSecond.toFixed(0).padStart(7)} | ${(r.ms / r.tasks).toFixed(2).padStart(7)} |`,
    );
  }
}

if (import.meta.main) await runEngineBench(Number(process.argv[2] ?? 300));
