/**
 * bench/memory: does memory grow with run length? For each shape a fresh child process runs a
 * long workflow on a WAL file in a temporary directory (a Loop of N iterations of two compute
 * tasks; a Sequence of N compute tasks) and samples RSS and heapUsed after a full GC every
 * `every` iterations / tasks. Prints the samples at 2k/5k/10k/20k and the growth per task
 * (least-squares slope from the first checkpoint on). Asserts nothing.
 * Usage: bun run bench/memory/index.tsx [n=20000] [every=1000]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { markdownTable } from "../markdown-table.ts";

const CHILD = join(import.meta.dir, "child.tsx");
const SHAPES = ["loop", "seq"] as const;
type Shape = (typeof SHAPES)[number];

type Sample = { units: number; tasks: number; rss: number; heapUsed: number; ms: number };
type ChildOut = { shape: Shape; n: number; tasks: number; wallMs: number; peakRssKb: number; samples: Sample[] };

async function child(shape: Shape, n: number, every: number): Promise<ChildOut> {
  const dir = mkdtempSync(join(tmpdir(), "smithers-bench-memory-"));
  try {
    const proc = Bun.spawn([process.execPath, "run", CHILD, shape, join(dir, "bench.db"), String(n), String(every)], {
      cwd: dir,
      stdout: "pipe",
      stderr: "pipe",
    });
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    if (code !== 0) throw new Error(`bench/memory child ${shape} exited ${code}:\n${stderr}`);
    return JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as ChildOut;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Least-squares slope of y over x. */
function slope(points: [number, number][]): number {
  const k = points.length;
  if (k < 2) return 0;
  const mx = points.reduce((s, [x]) => s + x, 0) / k;
  const my = points.reduce((s, [, y]) => s + y, 0) / k;
  const num = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  const den = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  return den === 0 ? 0 : num / den;
}

const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

export async function runMemoryBench(n = 20_000, every = 1_000): Promise<void> {
  const checkpoints = [2_000, 5_000, 10_000, 20_000].filter((c) => c <= n);
  const from = checkpoints[0] ?? every;
  const outs: ChildOut[] = [];
  for (const shape of SHAPES) outs.push(await child(shape, n, every));
  const label = (o: ChildOut) => (o.shape === "loop" ? `Loop, 2 tasks/iteration` : "Sequence");
  const at = (o: ChildOut, units: number) => o.samples.find((s) => s.units === units);
  console.log(`\nbench/memory: one fresh process per shape, WAL file, full GC before each sample (Bun ${Bun.version}, ${process.platform}/${process.arch})\n`);
  const header = ["shape", "unit", "start", ...checkpoints.map((c) => `${c / 1000}k`)];
  const rows: string[][] = [];
  for (const o of outs) {
    const unit = o.shape === "loop" ? "iterations" : "tasks";
    rows.push([`${label(o)}: RSS MB`, unit, mb(o.samples[0]!.rss), ...checkpoints.map((c) => (at(o, c) ? mb(at(o, c)!.rss) : "—"))]);
    rows.push([`${label(o)}: heapUsed MB`, unit, mb(o.samples[0]!.heapUsed), ...checkpoints.map((c) => (at(o, c) ? mb(at(o, c)!.heapUsed) : "—"))]);
  }
  console.log(markdownTable(header, rows));
  console.log("");
  console.log(
    markdownTable(
      ["shape", "tasks", "wall s", "ms/task", "peak RSS MB", `RSS B/task from ${from / 1000}k`, `heap B/task from ${from / 1000}k`],
      outs.map((o) => {
        const tail = o.samples.filter((s) => s.units >= from);
        return [
          label(o),
          o.tasks.toLocaleString("en-US"),
          (o.wallMs / 1000).toFixed(1),
          (o.wallMs / o.tasks).toFixed(3),
          (o.peakRssKb / 1024).toFixed(0),
          slope(tail.map((s) => [s.tasks, s.rss])).toFixed(0),
          slope(tail.map((s) => [s.tasks, s.heapUsed])).toFixed(0),
        ];
      }),
    ),
  );
}

if (import.meta.main) await runMemoryBench(Number(process.argv[2] ?? 20_000), Number(process.argv[3] ?? 1_000));
