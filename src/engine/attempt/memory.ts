/**
 * An agent task's memory (`<Memory>` / `memory` prop): the recalled block prepended to its prompt,
 * the digest of its output retained, and the store its `memoryTools` reach. The stores are
 * createMemory's over the run's own database, one per namespace, scoped to the run and workflow.
 */
import { type Sql, vectors } from "../../db/index.ts";
import { describeThrown, SmithersError } from "../../errors/index.ts";
import type { PlanTask, TaskMemory } from "../../jsx/index.ts";
import { createMemory, memoryTools, type Memory as MemoryStore, type MemoryHit, type WorkflowMemoryOptions } from "../../memory/index.ts";
import { type Clock, SYSTEM_CLOCK } from "../core/index.ts";
import { previousCall, recordedCall, recordedOutcome, recordedResult, type CallScope, type ToolMemory } from "../../tools/index.ts";

/** What an attempt needs for its task's memory: the workflow's embedder and its name. */
export type AttemptMemory = WorkflowMemoryOptions & { workflowName: string };

type Scope = {
  db: Parameters<typeof createMemory>[0]["db"];
  /** The run's signal (cancel, failure) and clock: retaining stops with the run, or after RETAIN_TIMEOUT_MS. */
  runSignal?: AbortSignal;
  clock?: Clock;
  runId: string;
  task: PlanTask;
  attempt: number;
  now: () => number;
  memory?: AttemptMemory;
};

/** A retained digest, embedded during the attempt and written with its output (recordSettle). */
export type RetainedDigest = { rows: readonly vectors.NewVector[]; method: vectors.VectorSearchMethod };

/** Opening and closing lines of the injected block; the byte cap (maxTokens) counts them too. */
const OPEN = "<smithers_memory_context>\nWhat memory recalled for this task, most relevant first:\n";
const CLOSE = "</smithers_memory_context>\n\n";
/** How long retaining may take (the embedding call) before it is given up, recorded as failed: the task never waits on it longer. */
export const RETAIN_TIMEOUT_MS = 60_000;
/** A digest longer than this is cut: a memory of what a task produced, not a copy of it. */
const DIGEST_CHARS = 4000;

const bytes = (text: string) => Buffer.byteLength(text, "utf8");

function stores(s: Scope, m: TaskMemory): MemoryStore[] {
  if (!s.memory) {
    throw new SmithersError(
      "MEMORY_NOT_CONFIGURED",
      `Task "${s.task.nodeId}" has memory but its workflow has no embedding model: createSmithers(schemas, { memory: { embedder } })`,
      { nodeId: s.task.nodeId },
    );
  }
  const { embedder, dimensions, maxRetries, workflowName } = s.memory;
  return m.namespaces.map((namespace) => createMemory({ db: s.db, embedder, dimensions, maxRetries, namespace, workflow: workflowName, runId: s.runId }));
}

/** The `k` best chunks of all the task's namespaces that carry its tags, best first. */
async function recallAll(s: Scope, m: TaskMemory, query: string, k: number, abortSignal?: AbortSignal): Promise<(MemoryHit & { namespace: string })[]> {
  const found = await Promise.all(
    stores(s, m).map(async (store) => (await store.recall(query, { k, filter: m.tags, abortSignal })).map((h) => ({ ...h, namespace: store.namespace }))),
  );
  return found
    .flat()
    .sort((a, b) => b.score - a.score)
    .slice(0, k);
}

/**
 * The block for these hits, best first, within `maxTokens` UTF-8 bytes (a token is at least one
 * byte, so the block never has more tokens than that): a chunk that would pass the cap is left
 * out whole, never cut, and smaller ones after it may still fit. Empty when none fits.
 */
export function memoryBlock(hits: readonly { content: string; namespace: string; score: number }[], maxTokens: number): string {
  let used = bytes(OPEN) + bytes(CLOSE);
  const lines: string[] = [];
  for (const hit of hits) {
    const line = `- [${hit.namespace}, similarity ${hit.score.toFixed(2)}] ${hit.content.replace(/\s+/g, " ").trim()}\n`;
    if (used + bytes(line) > maxTokens) continue;
    used += bytes(line);
    lines.push(line);
  }
  return lines.length === 0 ? "" : `${OPEN}${lines.join("")}${CLOSE}`;
}

/**
 * The task's prompt with its recalled block before it. The recall is journaled as the call
 * `memory:recall` under the task's key, so every retry of the same iteration (and a resume after a
 * crash) sees the block the first successful recall made. A failing embedder fails the attempt
 * (MEMORY_EMBED_FAILED, retried like any failure of the task; the next attempt recalls again).
 */
export async function promptWithMemory(s: Scope, prompt: string, signal: AbortSignal, onRecorded?: CallScope["onRecorded"]): Promise<string> {
  const m = s.task.memory;
  if (!m || m.query === null) return prompt;
  const query = m.query === "auto" ? prompt : m.query;
  const ids = { runId: s.runId, nodeId: s.task.nodeId, iteration: s.task.iteration, attempt: s.attempt };
  const key = `${s.runId}:${s.task.nodeId}:${s.task.iteration}:memory:recall`;
  const recorded = recordedResult(await previousCall(s.db, key));
  if (recorded) return `${String(recorded.output ?? "")}${prompt}`;
  // A read, not a side effect: journaled for the replay, it does not stop a rewind across the task.
  const call = { toolName: "memory:recall", input: { query }, sideEffect: false, idempotencyKey: key };
  const block = await recordedCall({ db: s.db, ...ids, now: s.now, onRecorded, signal }, call, async () =>
    memoryBlock(await recallAll(s, m, query, m.k, signal), m.maxTokens),
  );
  return `${block}${prompt}`;
}

/** What `memoryTools` reach during the attempt, when the task's memory has `tools: true`. */
export function toolMemory(s: Scope): ToolMemory | undefined {
  const m = s.task.memory;
  if (!m?.tools) return undefined;
  const agents = Array.isArray(s.task.agent) ? s.task.agent : [s.task.agent];
  const lacking = agents.find((agent) => {
    const tools = Object.values((agent as { tools?: Record<string, unknown> }).tools ?? {});
    return !(tools.includes(memoryTools.remember) && tools.includes(memoryTools.recall));
  });
  if (lacking) {
    throw new SmithersError(
      "MEMORY_NOT_CONFIGURED",
      `Task "${s.task.nodeId}" has memory tools: true, but its agent${(lacking as { id?: string }).id ? ` "${(lacking as { id?: string }).id}"` : ""} does not carry them: give it tools: { ...memoryTools }`,
      { nodeId: s.task.nodeId },
    );
  }
  const [first] = stores(s, m);
  return {
    remember: async (content, id) => (await first!.remember([{ content, metadata: m.tags, ...(id === undefined ? {} : { id }) }]))[0]!,
    recall: async (query, k) =>
      withinBytes(
        (await recallAll(s, m, query, k ?? m.k)).map((h) => ({ content: h.content, score: h.score, namespace: h.namespace })),
        m.maxTokens,
      ),
  };
}

/** The best hits whose JSON, as the tool returns it, stays within `maxTokens` UTF-8 bytes (the prompt block's rule). */
function withinBytes<T>(hits: readonly T[], maxTokens: number): T[] {
  const kept: T[] = [];
  for (const hit of hits) if (bytes(JSON.stringify({ hits: [...kept, hit] })) <= maxTokens) kept.push(hit);
  return kept;
}

function digestOf(s: Scope, data: Record<string, unknown>): string {
  const text = `Task "${s.task.label ?? s.task.nodeId}" of workflow "${s.memory?.workflowName ?? ""}" produced: ${JSON.stringify(data)}`;
  return text.length > DIGEST_CHARS ? `${text.slice(0, DIGEST_CHARS - 1)}…` : text;
}

/**
 * With `retain: "on-complete"`: the digest of the successful output, embedded now and written in
 * the transaction that writes the output (so both commit or neither: a crash before it loses
 * neither, the retry embeds again). Its id is the task's key: a retry replaces, never duplicates.
 * A failure (the embedder, a namespace of another length) never fails the task: it is recorded as
 * a failed `memory:retain` call in `_smithers_tool_calls` and nothing is retained.
 */
export async function retainDigest(s: Scope, data: Record<string, unknown>, onRecorded?: CallScope["onRecorded"]): Promise<RetainedDigest | undefined> {
  const m = s.task.memory;
  if (!m?.retain) return undefined;
  const [store] = stores(s, m);
  const namespace = store!.namespace;
  const id = `${s.runId}:${s.task.nodeId}:${s.task.iteration}`;
  const content = digestOf(s, data);
  const clock = s.clock ?? SYSTEM_CLOCK;
  const stop = new AbortController();
  const timer = clock.setTimeout(
    () => stop.abort(new SmithersError("MEMORY_EMBED_FAILED", `Retaining the digest of "${s.task.nodeId}" took over ${RETAIN_TIMEOUT_MS} ms`)),
    RETAIN_TIMEOUT_MS,
  );
  const abortSignal = s.runSignal ? AbortSignal.any([s.runSignal, stop.signal]) : stop.signal;
  try {
    const rows = await store!.prepare([{ id, content, metadata: { ...m.tags, nodeId: s.task.nodeId, iteration: s.task.iteration } }], { abortSignal });
    const held = await vectors.namespaceDimensions(s.db, namespace);
    if (held !== undefined && held !== rows[0]!.embedding.length) {
      throw new SmithersError(
        "MEMORY_DIMENSION_MISMATCH",
        `Namespace "${namespace}" holds embeddings of ${held} dimensions; the digest has ${rows[0]!.embedding.length}`,
      );
    }
    return { rows, method: await vectors.vectorSearchMethod(s.db) };
  } catch (error) {
    const ids = { runId: s.runId, nodeId: s.task.nodeId, iteration: s.task.iteration, attempt: s.attempt };
    const call = { toolName: "memory:retain", input: { namespace }, sideEffect: false, idempotencyKey: `${id}:memory:retain` };
    const recorded = SmithersError.is(error) ? error : new SmithersError("MEMORY_EMBED_FAILED", describeThrown(error), { cause: error });
    await recordedOutcome({ db: s.db, ...ids, now: s.now, onRecorded }, call, { status: "failed", error: recorded }).catch(() => undefined);
    return undefined;
  } finally {
    clock.clearTimeout(timer);
  }
}

/** Inside the output's transaction: the retained digest. */
export function writeDigest(q: Sql, digest: RetainedDigest): Promise<void> {
  return vectors.putVectorsIn(q, digest.rows, digest.method);
}
