/**
 * What bench/compare/index.ts hands each measured child process and what the child hands back.
 * Kept dependency-free (no engine imports) so every child loads only its own engine.
 */

/** Workflow shapes; `n` is the number of tasks (loop: iterations of its one task). */
export type Shape = "one" | "seq" | "par" | "loop";
export const SHAPES: readonly Shape[] = ["one", "seq", "par", "loop"];

export type RunSpec = { shape: Shape; n: number; dbPath: string };

/** The child's own measurements: wall time around the run only, and its peak RSS. */
export type ChildReport = { wallMs: number; maxRssKb: number };

export const RESULT_PREFIX = "BENCH_RESULT ";

export function parseSpec(arg: string | undefined): RunSpec {
  if (!arg) throw new Error("usage: <worker> '<RunSpec json>' (started by bench/compare/index.ts)");
  const spec = JSON.parse(arg) as RunSpec;
  if (!SHAPES.includes(spec.shape) || !(spec.n >= 1) || typeof spec.dbPath !== "string") {
    throw new Error(`bad RunSpec: ${arg}`);
  }
  return spec;
}

export function report(r: ChildReport): void {
  console.log(RESULT_PREFIX + JSON.stringify(r));
}
