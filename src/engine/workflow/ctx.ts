/**
 * ctx: what a workflow's build function sees. Built from persisted rows only (read from the
 * store on demand), so a resumed run renders exactly as the crashed one would have.
 */
import { SmithersError } from "../../errors/index.ts";
import { stripBookkeeping as strip, type OutputRegistry, type OutputRow, type OutputSnapshot, type OutputTarget } from "../../db/index.ts";
import { BoundedCache, estimateBytes, type CacheLimits, type CacheStats } from "../core/index.ts";
import { ROW_CACHE_BYTES, ROW_CACHE_SIZE } from "../core/index.ts";
import type { NodeState } from "../core/index.ts";
import { renderContext } from "../../jsx/index.ts";

export type OutputLookup = { nodeId: string; iteration?: number };

/** The node id onRead reports for a read of a whole table (ctx.outputs): any new row of it can change the render. */
export const ALL_NODES = "\0*";

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
  /**
   * Every row of an output, of every node and iteration (by iteration, then node id); also as
   * `ctx.outputs.<key>` for each output of createSmithers.
   */
  outputs: OutputsReader;
  /**
   * The entries of `value` (an array, a JSON text of one, or a single value) that `schema` accepts,
   * parsed; anything else is left out.
   * @example ctx.latestArray(ctx.latest(outputs.plan, "plan")?.steps, stepSchema)
   */
  latestArray<T = unknown>(value: unknown, schema: { safeParse(v: unknown): { success: boolean; data?: T } }): T[];
  /**
   * The state of a node (at `iteration`, default as for `output`): `pending`, `running`,
   * `finished`, `waiting-approval`, `waiting-event`, `waiting-timer` …; undefined before it started.
   * @example ctx.nodeState("ship-it") === "waiting-approval" ? <Task id="notify" …/> : null
   */
  nodeState(nodeId: string, iteration?: number): NodeState | undefined;
};

export type OutputsReader = (<T = Record<string, unknown>>(target: OutputTarget) => T[]) & { readonly [key: string]: Record<string, unknown>[] };

export type CtxSources = {
  runId: string;
  input: unknown;
  /** Rows in hand, for a ctx built without an index (tests, tools). */
  snapshot?: OutputSnapshot;
  registry: OutputRegistry;
  iteration: number;
  iterations: Record<string, number>;
  /** Default iteration for a node id (its loop's current iteration), learned from the last render. */
  iterationOf: (nodeId: string) => number;
  /** Told of every (table key, node id) the build function looks up, so the engine knows which new rows can change the render. */
  onRead?: (tableKey: string, nodeId: string) => void;
  /** What ctx can read (kept by the engine as rows arrive); without it, an index of `snapshot`. */
  index?: OutputIndex;
  /** Node states by (node id, iteration); the engine is told a render read one, since states change every step. */
  nodeState?: (nodeId: string, iteration: number) => NodeState | undefined;
};

/** Reads one stored row when it is not held in memory (the engine: SQLite, synchronously). */
export type RowReader = (tableKey: string, nodeId: string, iteration: number) => OutputRow | undefined;

/**
 * Which iterations of one node have a row, as sorted disjoint runs [start, end): a loop's
 * iterations 0..n-1 are one run, so the set is as small at iteration 20,000 as at 1.
 */
class IterationSet {
  /** start0, end0, start1, end1, … */
  private readonly runs: number[] = [];
  size = 0;

  get max(): number | undefined {
    const end = this.runs[this.runs.length - 1];
    return end === undefined ? undefined : end - 1;
  }

  /** Index (even) of the last run starting at or before `i`, or -2 when none does. */
  private runAtOrBefore(i: number): number {
    let lo = 0;
    let hi = this.runs.length / 2 - 1;
    let found = -2;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.runs[mid * 2]! <= i) {
        found = mid * 2;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  }

  *values(): Generator<number> {
    for (let r = 0; r < this.runs.length; r += 2) for (let i = this.runs[r]!; i < this.runs[r + 1]!; i++) yield i;
  }

  has(i: number): boolean {
    const at = this.runAtOrBefore(i);
    return at >= 0 && i < this.runs[at + 1]!;
  }

  add(i: number): void {
    const runs = this.runs;
    if (runs.length > 0 && runs[runs.length - 1] === i) {
      runs[runs.length - 1] = i + 1; // the common case: the next iteration of a loop
      this.size++;
      return;
    }
    const at = this.runAtOrBefore(i);
    if (at >= 0 && i < runs[at + 1]!) return;
    this.size++;
    const next = at + 2;
    const joinsNext = next < runs.length && runs[next] === i + 1;
    if (at >= 0 && runs[at + 1] === i) {
      if (joinsNext) runs.splice(at + 1, 2);
      else runs[at + 1] = i + 1;
    } else if (joinsNext) runs[next] = i;
    else runs.splice(next, 0, i, i + 1);
  }
}

const rowKey = (tableKey: string, nodeId: string, iteration: number) => `${tableKey}\0${nodeId}\0${iteration}`;

/**
 * What ctx can read, kept small: which rows exist (by table key, node id and iteration) and the
 * recently used rows, capped by ROW_CACHE_SIZE and ROW_CACHE_BYTES; any other row is read from
 * the store when a lookup asks for it. Rows settled but not yet committed are held until
 * `committed()`, since the store does not have them yet. Lookups cost the same in the 10,000th
 * loop iteration as in the first, and memory does not grow with the rows' size or number.
 */
export class OutputIndex {
  /** By `tableKey\0nodeId`: the one iteration with a row (most nodes, outside loops), or the set. */
  private readonly nodes = new Map<string, number | IterationSet>();
  /** Per table key: the row with the highest iteration (the last one added among equals). */
  private readonly top = new Map<string, { nodeId: string; iteration: number }>();
  private readonly pending = new Map<string, OutputRow>();
  private readonly cache: BoundedCache<OutputRow>;

  constructor(
    private readonly read: RowReader,
    limits: CacheLimits = { maxEntries: ROW_CACHE_SIZE, maxBytes: ROW_CACHE_BYTES },
  ) {
    this.cache = new BoundedCache<OutputRow>(limits, estimateBytes);
  }

  /** An index holding every row of `snapshot` (rows already in hand, nothing behind them). */
  static fromSnapshot(snapshot: OutputSnapshot): OutputIndex {
    const rows = new Map<string, OutputRow>();
    const index = new OutputIndex((t, n, i) => rows.get(rowKey(t, n, i)), { maxEntries: 0, maxBytes: 0 });
    for (const [tableKey, list] of Object.entries(snapshot)) {
      for (const row of list) {
        rows.set(rowKey(tableKey, row.nodeId, row.iteration), row);
        index.addKey(tableKey, row.nodeId, row.iteration);
      }
    }
    return index;
  }

  /** A stored row exists (its value is read when asked for). */
  addKey(tableKey: string, nodeId: string, iteration: number): void {
    const key = `${tableKey}\0${nodeId}`;
    const found = this.nodes.get(key);
    if (found === undefined) this.nodes.set(key, iteration);
    else if (typeof found !== "number") found.add(iteration);
    else if (found !== iteration) {
      const set = new IterationSet();
      set.add(found);
      set.add(iteration);
      this.nodes.set(key, set);
    }
    const top = this.top.get(tableKey);
    if (!top || iteration >= top.iteration) this.top.set(tableKey, { nodeId, iteration });
  }

  /** A row settled in memory: held until `committed()`, then kept only while the cache has room. */
  add(tableKey: string, row: OutputRow): void {
    this.addKey(tableKey, row.nodeId, row.iteration);
    const key = rowKey(tableKey, row.nodeId, row.iteration);
    this.cache.delete(key);
    this.pending.set(key, row);
  }

  /** A row as stored (read back after its commit): replaces the held one. */
  addStored(tableKey: string, row: OutputRow): void {
    this.addKey(tableKey, row.nodeId, row.iteration);
    const key = rowKey(tableKey, row.nodeId, row.iteration);
    this.pending.delete(key);
    this.cache.set(key, row);
  }

  /** The rows added so far are in the store now: they stay only while the cache has room. */
  committed(): void {
    for (const [key, row] of this.pending) this.cache.set(key, row);
    this.pending.clear();
  }

  private iterations(tableKey: string, nodeId: string): number | IterationSet | undefined {
    return this.nodes.get(`${tableKey}\0${nodeId}`);
  }

  row(tableKey: string, nodeId: string, iteration: number): OutputRow | undefined {
    const found = this.iterations(tableKey, nodeId);
    if (found === undefined || (typeof found === "number" ? found !== iteration : !found.has(iteration))) return undefined;
    const key = rowKey(tableKey, nodeId, iteration);
    const held = this.pending.get(key) ?? this.cache.get(key);
    if (held) return held;
    const row = this.read(tableKey, nodeId, iteration);
    if (row) this.cache.set(key, row);
    return row;
  }

  /** The node's row with the highest iteration. */
  latest(tableKey: string, nodeId: string): OutputRow | undefined {
    const found = this.iterations(tableKey, nodeId);
    const max = typeof found === "number" ? found : found?.max;
    return max === undefined ? undefined : this.row(tableKey, nodeId, max);
  }

  /** The table's row with the highest iteration, across nodes. */
  latestInTable(tableKey: string): OutputRow | undefined {
    const top = this.top.get(tableKey);
    return top && this.row(tableKey, top.nodeId, top.iteration);
  }

  /** Every row of the table, by iteration then node id. */
  rowsOf(tableKey: string): OutputRow[] {
    const prefix = `${tableKey}\0`;
    const keys: [iteration: number, nodeId: string][] = [];
    for (const [key, found] of this.nodes) {
      if (!key.startsWith(prefix)) continue;
      const nodeId = key.slice(prefix.length);
      for (const iteration of typeof found === "number" ? [found] : found.values()) keys.push([iteration, nodeId]);
    }
    keys.sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
    return keys.flatMap(([iteration, nodeId]) => this.row(tableKey, nodeId, iteration) ?? []);
  }

  /** How many iterations of the node have a row. */
  count(tableKey: string, nodeId: string): number {
    const found = this.iterations(tableKey, nodeId);
    return found === undefined ? 0 : typeof found === "number" ? 1 : found.size;
  }

  /** Rows held in memory beyond the index: the cache's figures and the uncommitted rows. */
  stats(): CacheStats & { pending: number } {
    return { ...this.cache.stats(), pending: this.pending.size };
  }
}

/**
 * The ctx of the workflow being rendered, for components and hooks below the build function.
 * Outside a render: CONTEXT_OUTSIDE_WORKFLOW.
 * @example function useReview(id: string) { return useCtx().latest(outputs.review, id); }
 */
export function useCtx<Input = unknown>(): SmithersCtx<Input> {
  const ctx = renderContext();
  if (!ctx)
    throw new SmithersError(
      "CONTEXT_OUTSIDE_WORKFLOW",
      "useCtx() is only available while a workflow renders (inside its build function or a component it renders)",
    );
  return ctx as unknown as SmithersCtx<Input>;
}

/** `ctx.outputs`: called with a table, or read as a property per table key; every row of that table. */
function outputsReader(src: CtxSources, index: OutputIndex): OutputsReader {
  const allRows = (target: OutputTarget) => {
    const info = src.registry.resolve(target);
    src.onRead?.(info.key, ALL_NODES);
    return index.rowsOf(info.key).map((row) => strip(row) as Record<string, unknown>);
  };
  const outputs = ((target: OutputTarget) => allRows(target)) as OutputsReader;
  for (const info of src.registry.all()) Object.defineProperty(outputs, info.key, { get: () => allRows(info.key), enumerable: true });
  return outputs;
}

/** `ctx.latestArray`: a value that may be a JSON text, one item or a list, as the items the schema accepts. */
function latestArray<T>(value: unknown, schema: { safeParse(v: unknown): { success: boolean; data?: T } }): T[] {
  let items = value;
  if (typeof items === "string") {
    try {
      items = JSON.parse(items);
    } catch {
      // a plain string is one entry
    }
  }
  const list = Array.isArray(items) ? items : items === undefined || items === null ? [] : [items];
  return list.flatMap((item) => {
    const parsed = schema.safeParse(item);
    return parsed.success ? [parsed.data as T] : [];
  });
}

export function buildCtx<Input>(src: CtxSources): SmithersCtx<Input> {
  const index = src.index ?? OutputIndex.fromSnapshot(src.snapshot ?? {});
  const tableFor = (target: OutputTarget, nodeId: string) => {
    const info = src.registry.resolve(target);
    src.onRead?.(info.key, nodeId);
    return info.key;
  };
  const find = (target: OutputTarget, key: OutputLookup) => {
    const iteration = key.iteration ?? src.iterationOf(key.nodeId);
    return strip(index.row(tableFor(target, key.nodeId), key.nodeId, iteration));
  };
  // Made on first use: most renders never read ctx.outputs, and its getters cost a shape per ctx.
  let outputs: OutputsReader | undefined;
  return {
    runId: src.runId,
    input: src.input as Input,
    get outputs() {
      return (outputs ??= outputsReader(src, index));
    },
    latestArray,
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
      return strip(index.latest(tableFor(target, nodeId), nodeId)) as T | undefined;
    },
    iterationCount(target: OutputTarget, nodeId: string): number {
      return index.count(tableFor(target, nodeId), nodeId);
    },
    nodeState(nodeId: string, iteration?: number): NodeState | undefined {
      return src.nodeState?.(nodeId, iteration ?? src.iterationOf(nodeId));
    },
  };
}
