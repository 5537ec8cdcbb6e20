/**
 * The task-local context tools find while an agent attempt runs. The engine wraps each agent
 * call in `runWithToolContext`; every tool the AI SDK executes during that call (however deep in
 * its loop, however many in parallel) reads the same context through AsyncLocalStorage.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { SmithersDb } from "../db/index.ts";
import type { ToolCallReport } from "../contract/index.ts";

export type ToolContext = {
  db: SmithersDb;
  runId: string;
  nodeId: string;
  iteration: number;
  attempt: number;
  /** Absolute directory the built-in tools are confined to (the task's cwd or worktree). */
  rootDir: string;
  /** The attempt's signal: once aborted, no new tool call starts and running processes are killed. */
  signal?: AbortSignal;
  now?: () => number;
  /** Told when a call is recorded, for the run's event journal. */
  onRecorded?: (report: ToolCallReport) => void;
  /** Cap on what a built-in tool returns or accepts (default DEFAULT_MAX_OUTPUT_BYTES). */
  maxOutputBytes?: number;
  /** How long `bash` and `grep` may run (default DEFAULT_TOOL_TIMEOUT_MS). */
  toolTimeoutMs?: number;
  /** The task's memory, when its `<Memory>` (or `memory` prop) has `tools: true`. */
  memory?: ToolMemory;
};

/** What `memoryTools` reach in a task whose memory has `tools: true` (set by the engine). */
export type ToolMemory = {
  /** Stores `content` (under `id`: remembering it again replaces it) and returns its id. */
  remember(content: string, id?: string): Promise<string>;
  recall(query: string, k?: number): Promise<{ content: string; score: number; namespace: string }[]>;
};

const storage = new AsyncLocalStorage<ToolContext>();

/**
 * How many calls of each tool were made under one context object: the `n` of the idempotency
 * key. Keyed by the object, so an engine that passes the same context to every agent call of
 * an attempt keeps counting across them.
 */
const callCounts = new WeakMap<ToolContext, Map<string, number>>();

/**
 * Runs `fn` with `ctx` as the tool context of everything it calls, synchronously or not.
 * Pass the same `ctx` object for every agent call of one attempt.
 * @example
 * const reply = await runWithToolContext({ db, runId, nodeId: "fix", iteration: 0, attempt: 1, rootDir }, () => agent.generate({ prompt }));
 */
export function runWithToolContext<T>(ctx: ToolContext, fn: () => T): T {
  return storage.run(ctx, fn);
}

/**
 * The tool context of the current task, or undefined outside one.
 * @example
 * const root = getToolContext()?.rootDir ?? process.cwd();
 */
export function getToolContext(): ToolContext | undefined {
  return storage.getStore();
}

/** The index of this call among the calls of `toolName` under `ctx` (0-based); counts it. */
export function nextCallIndex(ctx: ToolContext, toolName: string): number {
  let counts = callCounts.get(ctx);
  if (!counts) callCounts.set(ctx, (counts = new Map()));
  const n = counts.get(toolName) ?? 0;
  counts.set(toolName, n + 1);
  return n;
}
