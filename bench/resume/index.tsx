/**
 * bench/resume: how long `runWorkflow(wf, { runId, resume: true })` takes when N tasks already
 * finished and one is left. For each N a child process builds the run (a Sequence of N+1 static
 * tasks whose last one fails, so the run ends `failed`); then, for each measurement, a copy of
 * that database is resumed by a fresh child process (cold module cache, nothing in memory), which
 * reports the resume call's wall time, when RunResumed and the first NodeStarted were emitted,
 * and its peak RSS. Median of the runs. Prints a table; asserts nothing.
 * Usage: bun run bench/resume/index.tsx [sizes=1000,10000] [runs=3]
 */
import { copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { markdownTable } from "../markdown-table.ts";

const CHILD = join(import.meta.dir, "child.tsx");

type Sample = {
  processToCallMs: number;
  importMs: number;
  callMs: number;
  setupMs: number;
  toFirstStartEmittedMs: number;
  toFirstStartHeardMs: number;
  maxRssKb: number;
  processMs: number;
};

export type ResumeResult = { tasks: number; buildMs: number; runs: number } & Sample;

async function child(args: string[], env: Record<string, string> = {}): Promise<{ out: Record<string, number>; processMs: number }> {
  const started = performance.now();
  const proc = Bun.spawn([process.execPath, "run", CHILD, ...args], { env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  const processMs = performance.now() - started;
  if (code !== 0) throw new Error(`bench/resume child ${args.join(" ")} exited ${code}:\n${stderr}`);
  const line = stdout.trim().split("\n").at(-1) ?? "{}";
  return { out: JSON.parse(line), processMs };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

async function measure(tasks: number, runs: number): Promise<ResumeResult> {
  const dir = mkdtempSync(join(tmpdir(), "smithers-bench-resume-"));
  try {
    const built = join(dir, "built.db");
    const build = await child(["build", built, String(tasks)], { BENCH_RESUME_FAIL: "1" });
    if (build.out.status !== ("failed" as unknown as number)) throw new Error(`bench/resume: the build run ended ${build.out.status}, expected failed`);
    const samples: Sample[] = [];
    for (let i = 0; i < runs; i++) {
      // Resuming finishes the run, so every measurement resumes its own copy of the failed run.
      const path = join(dir, `resume-${i}.db`);
      copyFileSync(built, path);
      if (existsSync(`${built}-wal`)) copyFileSync(`${built}-wal`, `${path}-wal`);
      const { out, processMs } = await child(["resume", path, String(tasks)]);
      if (out.startedNodes !== 1) throw new Error(`bench/resume: expected one task to run on resume, ${out.startedNodes} did`);
      samples.push({ ...(out as unknown as Sample), processMs });
    }
    const pick = (k: keyof Sample) => median(samples.map((s) => s[k]));
    return {
      tasks,
      runs,
      buildMs: build.out.ms ?? 0,
      processToCallMs: pick("processToCallMs"),
      importMs: pick("importMs"),
      callMs: pick("callMs"),
      setupMs: pick("setupMs"),
      toFirstStartEmittedMs: pick("toFirstStartEmittedMs"),
      toFirstStartHeardMs: pick("toFirstStartHeardMs"),
      maxRssKb: pick("maxRssKb"),
      processMs: pick("processMs"),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function table(header: string[], rows: string[][]): void {
  console.log(markdownTable(header, rows));
}

export async function runResumeBench(sizes = [1_000, 10_000], runs = 3): Promise<void> {
  const results: ResumeResult[] = [];
  for (const tasks of sizes) results.push(await measure(tasks, runs));
  const f = (n: number) => n.toFixed(0);
  console.log(
    `\nbench/resume: resuming a failed run with N finished tasks and 1 left, fresh process per resume, median of ${runs} (WAL file, Bun ${Bun.version})\n`,
  );
  table(
    [
      "finished tasks",
      "build run ms",
      "module load ms",
      "resume call ms",
      "call → RunResumed ms",
      "call → first NodeStarted ms",
      "after first start ms",
      "whole process ms",
      "peak RSS MB",
    ],
    results.map((r) => [
      r.tasks.toLocaleString("en-US"),
      f(r.buildMs),
      f(r.importMs),
      f(r.callMs),
      f(r.setupMs),
      f(r.toFirstStartEmittedMs),
      f(r.callMs - r.toFirstStartHeardMs),
      f(r.processMs),
      (r.maxRssKb / 1024).toFixed(0),
    ]),
  );
  if (results.length > 1) {
    const [a, b] = [results[0]!, results[results.length - 1]!];
    const x = b.tasks / a.tasks;
    console.log(
      `\n${x}x the tasks: resume call ${(b.callMs / a.callMs).toFixed(1)}x, up to the first new task ${(b.toFirstStartEmittedMs / a.toFirstStartEmittedMs).toFixed(1)}x, peak RSS ${(b.maxRssKb / a.maxRssKb).toFixed(1)}x.`,
    );
  }
}

if (import.meta.main) await runResumeBench(process.argv[2] ? process.argv[2].split(",").map(Number) : undefined, Number(process.argv[3] ?? 3));
