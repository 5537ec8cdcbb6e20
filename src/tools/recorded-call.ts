/**
 * The journal of calls with consequences, shared by `ctx.sideEffect` (function tasks) and
 * `defineTool` (agent tools): the intent is recorded before the call runs, the result or error
 * after, and a later attempt reads the record back under the call's idempotency key.
 */
import { toolCalls, type SmithersDb } from "../db/index.ts";
import { errorToJson, SmithersError } from "../errors/index.ts";
import type { ToolCallReport } from "../contract/index.ts";

export type CallScope = {
  db: SmithersDb;
  runId: string;
  nodeId: string;
  iteration: number;
  attempt: number;
  now: () => number;
  onRecorded?: ((report: ToolCallReport) => void) | undefined;
  signal?: AbortSignal | undefined;
};

export type CallRecord = {
  toolName: string;
  input: unknown;
  /** Recorded with a full fsync before the call runs (see startToolCall). */
  sideEffect: boolean;
  idempotencyKey: string;
};

type PreviousCall = Awaited<ReturnType<typeof toolCalls.findToolCallByIdempotencyKey>>;

/**
 * Once the attempt is stopped (timeout, cancel) a body or agent loop that ignores its signal may
 * still reach a call while a retry runs the same key: a stopped attempt starts none.
 */
export function throwIfStopped(scope: Pick<CallScope, "signal" | "nodeId" | "attempt">, what: string): void {
  if (!scope.signal?.aborted) return;
  const reason = scope.signal.reason;
  throw SmithersError.is(reason)
    ? reason
    : new SmithersError("TASK_CANCELLED", `${what} was not started: its attempt was stopped`, { nodeId: scope.nodeId, attempt: scope.attempt });
}

/** The latest call made under `key`, if any: its status says whether its outcome is known. */
export function previousCall(db: SmithersDb, key: string): Promise<PreviousCall> {
  return toolCalls.findToolCallByIdempotencyKey(db, key);
}

/** The result an earlier call recorded, if it has one (a succeeded call, or a replay of one). */
export function recordedResult(previous: PreviousCall): { output: unknown } | undefined {
  if (previous?.status !== "succeeded" && previous?.status !== "replayed") return undefined;
  return { output: previous.outputJson === null ? undefined : JSON.parse(previous.outputJson) };
}

/** An earlier call recorded its intent and never its outcome: the process died during it. */
export function outcomeUnknown(previous: PreviousCall): boolean {
  return previous?.status === "started";
}

function ids(scope: CallScope) {
  return { runId: scope.runId, nodeId: scope.nodeId, iteration: scope.iteration, attempt: scope.attempt };
}

/** Records the intent, runs `fn` unless the attempt was stopped meanwhile, records the outcome. */
export async function recordedCall<T>(scope: CallScope, call: CallRecord, fn: () => T | Promise<T>): Promise<T> {
  const seq = await toolCalls.startToolCall(scope.db, { ...ids(scope), ...call, startedAtMs: scope.now() });
  scope.onRecorded?.({ type: "ToolCallStarted", toolName: call.toolName });
  let value: T;
  try {
    throwIfStopped(scope, `Call "${call.toolName}"`); // stopped while the intent was being recorded: the call is not made
    value = await fn();
  } catch (error) {
    await toolCalls.finishToolCall(scope.db, { ...ids(scope), seq, finishedAtMs: scope.now(), error: errorToJson(error) });
    scope.onRecorded?.({ type: "ToolCallFinished", toolName: call.toolName, status: "failed" });
    throw error;
  }
  await toolCalls.finishToolCall(scope.db, { ...ids(scope), seq, finishedAtMs: scope.now(), output: value ?? null });
  scope.onRecorded?.({ type: "ToolCallFinished", toolName: call.toolName, status: "succeeded" });
  return value;
}

/**
 * Records a call that ends as it is recorded: `replayed` (an earlier attempt's result is returned,
 * nothing runs) or `failed` before running (its input was refused).
 */
export async function recordedOutcome(
  scope: CallScope,
  call: CallRecord,
  outcome: { status: "replayed"; output: unknown } | { status: "failed"; error: unknown },
): Promise<void> {
  const at = scope.now();
  const base = { ...ids(scope), ...call, startedAtMs: at, finishedAtMs: at };
  await toolCalls.recordToolCall(
    scope.db,
    outcome.status === "replayed" ? { ...base, status: "replayed", output: outcome.output } : { ...base, status: "failed", error: errorToJson(outcome.error) },
  );
  scope.onRecorded?.({ type: "ToolCallStarted", toolName: call.toolName });
  scope.onRecorded?.({ type: "ToolCallFinished", toolName: call.toolName, status: outcome.status });
}
