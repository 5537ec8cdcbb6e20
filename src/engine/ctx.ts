/**
 * ctx: what a workflow's build function sees. Built from the persisted snapshot only, so a
 * resumed run renders exactly as the crashed one would have.
 */
import { SmithersError } from "../errors/index.ts";
import type { OutputRegistry, OutputTarget } from "../db/output-tables.ts";
import { stripBookkeeping as strip, type OutputRow, type OutputSnapshot } from "../db/snapshot.ts";

export type OutputLookup = { nodeId: string; iteration?: number };

export type SmithersCtx<Input = unknown> = {
  runId: string;
  input: Input;
  /** Iteration of the active loop (0 outside loops). */
  iteration: number;
  /** Current iteration of every loop, by loop id. */
  iterations: Record<string, number>;
  /** The row of `nodeId` at `iteration` (default: the iteration of the loop holding that node, else 0); throws if absent. */
  output<T = Record<string, unknown>>(target: OutputTarget, key: OutputLookup): T;
  outputMaybe<T = Record<string, unknown>>(target: OutputTarget, key: OutputLookup): T | undefined;
  /** The row of `nodeId` with the highest iteration. */
  latest<T = Record<string, unknown>>(target: OutputTarget, nodeId: string): T | undefined;
  /** How many iterations of `nodeId` wrote a row. */
  iterationCount(target: OutputTarget, nodeId: string): number;
};

export type CtxSources = {
  runId: string;
  input: unknown;
  snapshot: OutputSnapshot;
  registry: OutputRegistry;
  iteration: number;
  iterations: Record<string, number>;
  /** Default iteration for a node id (its loop's current iteration), learned from the last render. */
  iterationOf: (nodeId: string) => number;
  /** Told of every (table key, node id) the build function looks up, so the engine knows which new rows can change the render. */
  onRead?: (tableKey: string, nodeId: string) => void;
};

export function buildCtx<Input>(src: CtxSources): SmithersCtx<Input> {
  const rowsFor = (target: OutputTarget, nodeId: string) => {
    const info = src.registry.resolve(target);
    src.onRead?.(info.key, nodeId);
    return (src.snapshot[info.key] ?? []).filter((r) => r.nodeId === nodeId);
  };
  const find = (target: OutputTarget, key: OutputLookup) => {
    const iteration = key.iteration ?? src.iterationOf(key.nodeId);
    return strip(rowsFor(target, key.nodeId).find((r) => r.iteration === iteration));
  };
  return {
    runId: src.runId,
    input: src.input as Input,
    iteration: src.iteration,
    iterations: src.iterations,
    output<T>(target: OutputTarget, key: OutputLookup): T {
      const row = find(target, key);
      if (!row) {
        const iteration = key.iteration ?? src.iterationOf(key.nodeId);
        throw new SmithersError(
          "OUTPUT_NOT_FOUND",
          `No output yet for node "${key.nodeId}" iteration ${iteration}; use ctx.outputMaybe while it may not have run`,
          { nodeId: key.nodeId, iteration },
        );
      }
      return row as T;
    },
    outputMaybe<T>(target: OutputTarget, key: OutputLookup): T | undefined {
      return find(target, key) as T | undefined;
    },
    latest<T>(target: OutputTarget, nodeId: string): T | undefined {
      let best: OutputRow | undefined;
      for (const row of rowsFor(target, nodeId)) if (!best || row.iteration > best.iteration) best = row;
      return strip(best) as T | undefined;
    },
    iterationCount(target: OutputTarget, nodeId: string): number {
      return new Set(rowsFor(target, nodeId).map((r) => r.iteration)).size;
    },
  };
}
