/**
 * bench/fork: forking a finished run of N tasks at its middle frame (`forkRun`), for a Sequence
 * and a Parallel of N compute tasks: the time of the call (reading the frame chain up to the
 * frame, copying the node and output rows of the tasks done by then, writing the fork's run,
 * input and events) and the bytes it adds to the database file (WAL checkpointed before and
 * after). Median of the forks. Prints a table; asserts nothing.
 * Usage: bun run bench fork [tasks=10000] [forks=3]
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { frames } from "../../src/db/index.ts";
import { forkRun } from "../../src/engine/index.ts";
import { createSmithers, runWorkflow } from "../../src/index.ts";
import { markdownTable } from "../markdown-table.ts";
import { sequenceWorkflow } from "../sequence-workflow.tsx";

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

async function measure(group: "sequence" | "parallel", tasks: number, forks: number) {
  const dir = mkdtempSync(join(tmpdir(), "smithers-bench-fork-"));
  try {
    const dbPath = join(dir, "fork.db");
    const kit = createSmithers({ step: z.object({ n: z.number() }) }, { dbPath });
    const wf = sequenceWorkflow(kit, tasks, `fork-${group}`, group);
    const built = performance.now();
    const run = await runWorkflow(wf, { runId: "parent" });
    const buildMs = performance.now() - built;
    if (run.status !== "finished") throw new Error(`bench/fork: the run ended ${run.status}`);
    const db = wf.dbFor();
    const last = await frames.lastFrameNo(db, "parent");
    const frame = Math.floor(last / 2);
    const size = async () => {
      await db.checkpoint();
      return statSync(dbPath).size;
    };
    const times: number[] = [];
    const bytes: number[] = [];
    let copied = 0;
    for (let i = 0; i < forks; i++) {
      const before = await size();
      const t = performance.now();
      const fork = await forkRun(wf, { runId: "parent", frame, newRunId: `fork-${i}` });
      times.push(performance.now() - t);
      bytes.push((await size()) - before);
      copied = fork.copied;
    }
    await db.close();
    return { group, tasks, frames: last + 1, frame, copied, buildMs, forkMs: median(times), bytes: median(bytes) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function runForkBench(args: string[] = []): Promise<void> {
  const tasks = Number(args[0] ?? 10_000);
  const forks = Number(args[1] ?? 3);
  const rows: string[][] = [];
  for (const group of ["sequence", "parallel"] as const) {
    const r = await measure(group, tasks, forks);
    rows.push([
      `${r.group}-${r.tasks}`,
      String(r.frames),
      String(r.frame),
      String(r.copied),
      (r.buildMs / 1000).toFixed(1),
      r.forkMs.toFixed(0),
      (r.bytes / 1024).toFixed(0),
      r.copied > 0 ? ((r.bytes / r.copied) | 0).toString() : "-",
    ]);
  }
  console.log(`fork of a finished run at its middle frame (median of ${forks})`);
  console.log(markdownTable(["run", "frames", "fork at", "tasks kept", "run s", "fork ms", "KB written", "bytes/task kept"], rows));
}

if (import.meta.main) await runForkBench(process.argv.slice(2));
