/**
 * What bench/compare/index.ts hands each measured child process and what the child hands back.
 * Kept free of engine imports so every child loads only its own engine.
 */
import { readFileSync } from "node:fs";

/** Workflow shapes; `n` is the number of tasks (loop: iterations of its one task). */
export type Shape = "one" | "seq" | "par" | "loop";
export const SHAPES: readonly Shape[] = ["one", "seq", "par", "loop"];

/**
 * `warm`: run the same workflow once on a scratch database first, and time only the second run.
 * `count`: count the SQL statements the run executes (ours only; bench/statement-counter.ts), in
 * a run of its own: the counting wrappers would add to a timed run's wall.
 */
export type RunSpec = { shape: Shape; n: number; dbPath: string; warm?: boolean; count?: boolean };

/** The child's own measurements: wall time around the run only, its peak RSS, and (`count`) the statements it executed. */
export type ChildReport = { wallMs: number; peakRssKb: number; statements?: number };

export const RESULT_PREFIX = "BENCH_RESULT ";

export function parseSpec(arg: string | undefined): RunSpec {
  if (!arg) throw new Error("usage: <worker> '<RunSpec json>' (started by bench/compare/index.ts)");
  const spec = JSON.parse(arg) as RunSpec;
  if (!SHAPES.includes(spec.shape) || !(spec.n >= 1) || typeof spec.dbPath !== "string") {
    throw new Error(`bad RunSpec: ${arg}`);
  }
  return spec;
}

/**
 * This process's peak resident set in KB. On Linux it is VmHWM from /proc/self/status: the peak of
 * this process's own memory since exec. Not `process.resourceUsage().maxRSS`: on Linux that value
 * survives exec and starts at the PEAK OF THE PARENT, since the spawning bench process's own peak
 * is carried into the child. Elsewhere it falls back to maxRSS.
 */
export function peakRssKb(): number {
  try {
    const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync("/proc/self/status", "utf8"));
    if (m) return Number(m[1]);
  } catch {}
  return process.resourceUsage().maxRSS;
}

export function report(r: ChildReport): void {
  console.log(RESULT_PREFIX + JSON.stringify(r));
}
