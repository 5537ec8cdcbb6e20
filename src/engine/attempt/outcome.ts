/** What an ended attempt comes to (finished, failed and whether it is retried, cancelled, suspended), decided without the database. */
import { AGENT_NEVER_RETRY_CODES } from "../../agents/index.ts";
import { outputRowFor } from "../../db/index.ts";
import { FatalError, isInstance, RetryableError, type SmithersError } from "../../errors/index.ts";
import type { WaitingStatus } from "../core/index.ts";
import type { AttemptInput, AttemptResult } from "./attempt.ts";

export type AttemptOutcome =
  /** `row`: the output row as written (a custom table may add defaults on disk), for the snapshot. */
  | { kind: "finished"; durationMs: number; row: Record<string, unknown> }
  /** `retryAtMs`: when a retryable failure may run again (set by the engine from the retry policy), stored as the node's wake_at_ms. */
  /**
   * `rateLimited`: every agent of the task's fallback list was rate-limited; the node waits
   * (`waiting-rate`) until `waitUntilMs` (set by the engine), spending no retry.
   */
  | {
      kind: "failed";
      error: SmithersError;
      retryable: boolean;
      retryAfterMs?: number;
      retryAtMs?: number;
      rateLimited?: boolean;
      waitUntilMs?: number;
      durationMs: number;
    }
  | { kind: "cancelled"; durationMs: number }
  /** A `<Subflow>`'s child run stopped to wait: the node waits in the same state until the child is due (`wakeAtMs`, when it has a time). */
  | { kind: "suspended"; status: WaitingStatus; wakeAtMs: number | undefined; childRunId: string; durationMs: number };

/** Failures no retry can mend (the workflow's own input is wrong): the task fails at once, whatever its retries. */
// A bad worktree, or a cache key that cannot be made, fails the same way every time: no retry.
// So does an agent whose CLI is missing or not logged in, or that was given a bad option or schema (AGENT_NEVER_RETRY_CODES).
// A child run stopped by the budget it had from its parent: the parent is at its limit too.
const NEVER_RETRIED: ReadonlySet<string> = new Set([
  "WORKTREE_INVALID",
  "WORKTREE_NOT_IN_REPO",
  "CACHE_KEY_FAILED",
  // A sandbox that cannot start, or a policy it cannot enforce, stays so.
  "SANDBOX_UNAVAILABLE",
  "SANDBOX_POLICY_UNSUPPORTED",
  // A task with memory but no embedder (or tools its agent lacks), or embeddings of another length than its namespace's.
  "MEMORY_NOT_CONFIGURED",
  "MEMORY_AI_SDK_MISSING",
  "MEMORY_DIMENSION_MISMATCH",
  "BUDGET_EXCEEDED",
  "BUDGET_UNPRICED",
  // A replayed transcript (smithers-workflows/testing) that ran out or differs answers the same way again.
  "REPLAY_EXHAUSTED",
  "REPLAY_MISMATCH",
  ...AGENT_NEVER_RETRY_CODES,
]);

/** The delay the failure asks for before a retry: a RetryableError's, or a rate limit's (AGENT_RATE_LIMITED details.retryAfterMs). */
function suggestedDelay(thrown: unknown, error: SmithersError): number | undefined {
  if (isInstance(thrown, RetryableError)) return thrown.retryAfterMs;
  const asked = error.code === "AGENT_RATE_LIMITED" ? (error.details as { retryAfterMs?: unknown }).retryAfterMs : undefined;
  return typeof asked === "number" && Number.isFinite(asked) ? asked : undefined;
}

/**
 * What an ended attempt comes to, decided without the database: finished (with the output row
 * it stores), failed (retryable while `canRetry` and the error is not fatal) or cancelled.
 */
export function settleOutcome(a: AttemptInput, result: AttemptResult, canRetry: boolean): AttemptOutcome {
  const durationMs = result.finishedAtMs - a.startedAtMs;
  if (result.ok) {
    const row = outputRowFor(a.info, { runId: a.runId, nodeId: a.task.nodeId, iteration: a.task.iteration }, result.data);
    for (const field of Object.keys(row)) row[field] ??= null;
    return { kind: "finished", durationMs, row };
  }
  const { error, thrown } = result;
  if (error.code === "TASK_CANCELLED") return { kind: "cancelled", durationMs };
  if (error.code === "SUBFLOW_WAITING" && a.task.mode === "subflow" && !result.stopped) {
    const { childStatus, childRunId, wakeAtMs } = error.details as { childStatus: WaitingStatus; childRunId: string; wakeAtMs: number | null };
    return { kind: "suspended", status: childStatus, wakeAtMs: wakeAtMs ?? undefined, childRunId, durationMs };
  }
  // Every agent of the list rate-limited: a wait for the window, not a failure (see run-attempts.ts).
  if (error.code === "AGENT_RATE_LIMITED" && error.details.everyAgent === true && !result.stopped)
    return { kind: "failed", error, retryable: false, rateLimited: true, retryAfterMs: suggestedDelay(thrown, error), durationMs };
  const retryable = !isInstance(thrown, FatalError) && !NEVER_RETRIED.has(error.code) && canRetry;
  return { kind: "failed", error, retryable, retryAfterMs: suggestedDelay(thrown, error), durationMs };
}
