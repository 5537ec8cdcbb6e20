/**
 * A task's `cache` policy at execution time. The attempt is recorded running first, as any
 * other (write before do); then the key is made from `cache.by(ctx)` and the entry looked up.
 * A fresh entry the output schema still accepts is the attempt's output and the body does not
 * run; otherwise the body runs and its validated output is stored under the key in the same
 * transaction as the output row (see recordSettle), so neither ever exists without the other.
 */
import type { Agent } from "../../agents/index.ts";
import { cache as cacheRows, type Sql } from "../../db/index.ts";
import { describeThrown, SmithersError } from "../../errors/index.ts";
import type { CacheKeyContext, PlanTask } from "../../jsx/index.ts";
import type { AttemptInput } from "./attempt.ts";

/** What a cached attempt needs beyond its task. */
export type AttemptCache = {
  workflowName: string;
  /** The ctx `cache.by` receives, built when it is called. */
  ctx: () => CacheKeyContext;
};

/** A cached task's entry: its key, and whether the output came from it (a hit) or is to be stored under it. */
export type CacheOutcome = { cacheKey: string; schemaSig: string; agentSig: string | null; hit: boolean };

/** The ids of a task's agents, part of its cache key: another agent is another entry. */
function agentSignature(task: PlanTask): string | null {
  if (task.mode !== "agent" || !task.agent) return null;
  const agents = Array.isArray(task.agent) ? task.agent : [task.agent as Agent];
  return agents.map((agent) => agent.id ?? "").join(",");
}

/** `cache.by(ctx)`, checked: a throw, a promise or a value without one JSON form fails the task with CACHE_KEY_FAILED. */
function cacheByValue(task: PlanTask, cache: AttemptCache): unknown {
  const by = task.cache?.by;
  if (!by) return null;
  const fail = (why: string, cause?: unknown) =>
    new SmithersError("CACHE_KEY_FAILED", `Task "${task.nodeId}": ${why}; the task did not run and nothing was stored`, {
      nodeId: task.nodeId,
      ...(cause === undefined ? {} : { cause }),
    });
  let value: unknown;
  try {
    value = by(cache.ctx());
  } catch (cause) {
    throw fail(`cache.by threw: ${describeThrown(cause)}`, cause);
  }
  if (value === undefined) throw fail("cache.by returned undefined (it must return the value the output depends on)");
  if (typeof (value as { then?: unknown } | null)?.then === "function") throw fail("cache.by returned a promise; it must return a value synchronously");
  try {
    cacheRows.cacheKeyJson(value);
  } catch (cause) {
    throw fail(`cache.by returned a value that cannot be a cache key: ${describeThrown(cause)}`, cause);
  }
  return value;
}

/**
 * Runs `body` unless a fresh entry is found that `accepts` (the output schema) still takes; an
 * entry the schema now rejects is a miss, never a failure. Without a policy, just the body.
 */
export async function throughCache<T extends { raw: unknown; cache?: CacheOutcome }>(
  a: AttemptInput,
  signal: AbortSignal,
  accepts: (raw: unknown) => boolean,
  body: () => Promise<T>,
): Promise<T | { raw: unknown; cache: CacheOutcome }> {
  const spec = a.task.cache;
  if (!spec || !a.cache) return body();
  const by = cacheByValue(a.task, a.cache);
  const agentSig = agentSignature(a.task);
  const parts = {
    scope: spec.scope,
    runId: a.runId,
    workflowName: a.cache.workflowName,
    nodeId: a.task.nodeId,
    key: spec.key,
    by,
    version: spec.version,
    agentSig,
  };
  const found = await cacheRows.lookupCache(a.db, parts, a.info.tableName);
  const outcome: CacheOutcome = { cacheKey: found.cacheKey, schemaSig: found.schemaSig, agentSig, hit: false };
  const entry = found.hit;
  // Fresh while younger than ttlMs, by the engine's clock.
  if (entry && (spec.ttlMs === undefined || a.now() - entry.row.createdAtMs < spec.ttlMs)) {
    // The stored values go through the same one validation as a body's output would.
    const raw = cacheRows.revivePayload(a.info, entry.payload);
    if (accepts(raw)) return { raw, cache: { ...outcome, hit: true } };
  }
  if (signal.aborted) throw signal.reason;
  return { ...(await body()), cache: outcome };
}

/** Inside the settling transaction, beside the output row: a miss's output under its key (replacing an expired entry). */
export async function storeCacheEntry(q: Sql, a: AttemptInput, outcome: CacheOutcome, data: Record<string, unknown>, createdAtMs: number): Promise<void> {
  await cacheRows.putCacheIn(q, {
    cacheKey: outcome.cacheKey,
    workflowName: a.cache?.workflowName ?? "",
    nodeId: a.task.nodeId,
    outputTable: a.info.tableName,
    payload: data,
    createdAtMs,
    schemaSig: outcome.schemaSig,
    agentSig: outcome.agentSig,
  });
}
