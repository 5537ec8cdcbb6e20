/**
 * ctx: what a workflow's build function sees. Built from the persisted snapshot only, so a
 * resumed run renders exactly as the crashed one would have.
 */
import { SmithersError } from "../errors/index.ts";
import { stripBookkeeping as strip, type OutputRegistry, type OutputRow, type OutputSnapshot, type OutputTarget } from "../db/index.ts";

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
  /** The snapshot indexed by node (kept by the engine as rows arrive); without it lookups scan. */
  index?: OutputIndex;
};

/**
 * The snapshot's rows by (table key, node id, iteration), kept up to date as rows arrive, so a
 * ctx lookup costs the same in the 10,000th loop iteration as in the first.
 */
export class OutputIndex {
  private readonly byNode = new Map<string, Map<number, OutputRow>>();
  private readonly highest = new Map<string, OutputRow>();

  /** Tables whose snapshot rows are in the index (a table is indexed on first use). */
  private readonly indexed = new Set<string>();

  constructor(private readonly snapshot: OutputSnapshot) {}

  private ensure(tableKey: string): void {
    if (this.indexed.has(tableKey)) return;
    this.indexed.add(tableKey);
    for (const row of this.snapshot[tableKey] ?? []) this.put(tableKey, row);
  }

  add(tableKey: string, row: OutputRow): void {
    this.ensure(tableKey);
    this.put(tableKey, row);
  }

  private put(tableKey: string, row: OutputRow): void {
    const key = `${tableKey}\0${row.nodeId}`;
    let rows = this.byNode.get(key);
    if (!rows) this.byNode.set(key, (rows = new Map()));
    rows.set(row.iteration, row);
    const top = this.highest.get(key);
    if (!top || row.iteration >= top.iteration) this.highest.set(key, row);
  }

  /** The node's row with the highest iteration. */
  latest(tableKey: string, nodeId: string): OutputRow | undefined {
    this.ensure(tableKey);
    return this.highest.get(`${tableKey}\0${nodeId}`);
  }

  /** The node's rows by iteration (empty when it has none). */
  rows(tableKey: string, nodeId: string): ReadonlyMap<number, OutputRow> {
    this.ensure(tableKey);
    return this.byNode.get(`${tableKey}\0${nodeId}`) ?? EMPTY;
  }
}

const EMPTY: ReadonlyMap<number, OutputRow> = new Map();

export function buildCtx<Input>(src: CtxSources): SmithersCtx<Input> {
  const index = src.index ?? new OutputIndex(src.snapshot);
  const rowsFor = (target: OutputTarget, nodeId: string) => {
    const info = src.registry.resolve(target);
    src.onRead?.(info.key, nodeId);
    return index.rows(info.key, nodeId);
  };
  const find = (target: OutputTarget, key: OutputLookup) => {
    const iteration = key.iteration ?? src.iterationOf(key.nodeId);
    return strip(rowsFor(target, key.nodeId).get(iteration));
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
      const info = src.registry.resolve(target);
      src.onRead?.(info.key, nodeId);
      return strip(index.latest(info.key, nodeId)) as T | undefined;
    },
    iterationCount(target: OutputTarget, nodeId: string): number {
      return rowsFor(target, nodeId).size;
    },
  };
}
