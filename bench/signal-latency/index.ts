/**
 * bench/signal-latency: time from `sendSignal` to the woken run's next task starting, with a
 * real `smithers supervise --watch` process waking the runs, at its default interval (1 s) and at
 * 100 ms. Each run waits on a <WaitForEvent>; signals are sent at random moments relative to the
 * daemon's passes, so the figures include the wait for the next pass (about half the interval on
 * average) plus the claim, the resume and one engine step.
 *
 *   bun run bench/signal-latency/index.ts [runs]      # default 10 per interval
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Database } from "bun:sqlite";
import { runWorkflow, sendSignal } from "../../src/index.ts";
import { openSmithersDb } from "../../src/db/index.ts";
import { markdownTable } from "../markdown-table.ts";
import workflow from "./workflow.tsx";

const root = resolve(import.meta.dir, "../..");
const workflowPath = join(import.meta.dir, "workflow.tsx");

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

async function measure(intervalMs: number | undefined, runs: number): Promise<number[]> {
  const dir = mkdtempSync(join(tmpdir(), "smithers-bench-signal-"));
  const dbPath = join(dir, "bench.db");
  const db = openSmithersDb(dbPath);
  const flags = intervalMs === undefined ? [] : ["--interval-ms", String(intervalMs)];
  const daemon = Bun.spawn([process.execPath, join(root, "src/cli/index.ts"), "supervise", "--watch", "--db", dbPath, ...flags], {
    cwd: root,
    stdout: "pipe",
    stderr: "inherit",
  });
  try {
    for (let i = 0; i < runs; i++) {
      const result = await runWorkflow(workflow, { runId: `r${i}`, dbPath, workflowPath });
      if (result.status !== "waiting-event") throw new Error(`run r${i} ended ${result.status}, expected waiting-event`);
    }
    const reader = new Database(dbPath, { readonly: true });
    const latencies: number[] = [];
    try {
      for (let i = 0; i < runs; i++) {
        await Bun.sleep(Math.random() * (intervalMs ?? 1_000)); // a random phase against the daemon's passes
        const sentAtMs = Date.now();
        await sendSignal(db, { runId: `r${i}`, name: "go", data: { sentAtMs } });
        const deadline = sentAtMs + 30_000;
        let ran: { ranAtMs: number } | null = null;
        while (!ran && Date.now() < deadline) {
          await Bun.sleep(5);
          ran = reader.query<{ ranAtMs: number }, [string]>("SELECT ran_at_ms AS ranAtMs FROM after WHERE run_id = ?").get(`r${i}`);
        }
        if (!ran) throw new Error(`run r${i} was not woken within 30 s`);
        latencies.push(ran.ranAtMs - sentAtMs);
      }
    } finally {
      reader.close();
    }
    return latencies.sort((a, b) => a - b);
  } finally {
    daemon.kill("SIGKILL"); // nothing of the daemon's is in flight: every run it woke has finished
    await daemon.exited;
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function runSignalLatencyBench(runs = 10): Promise<void> {
  const rows: string[][] = [];
  for (const intervalMs of [undefined, 100]) {
    const l = await measure(intervalMs, runs);
    const figures = [quantile(l, 0), quantile(l, 0.5), quantile(l, 0.9), l.at(-1)!].map((ms) => ms.toFixed(0));
    rows.push([intervalMs === undefined ? "1000 (default)" : String(intervalMs), String(runs), ...figures]);
  }
  console.log(
    `\nbench/signal-latency: sendSignal -> the woken run's next task starts, real \`smithers supervise --watch\` (Bun ${Bun.version}, ${process.platform}/${process.arch})\n`,
  );
  console.log(markdownTable(["daemon interval ms", "signals", "min ms", "median ms", "p90 ms", "max ms"], rows));
}

if (import.meta.main) await runSignalLatencyBench(Number(process.argv[2] ?? 10));
