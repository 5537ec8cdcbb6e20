/**
 * Exactly-once side effects across retries and crashes. Before an irreversible call the intent
 * is committed to `_smithers_tool_calls` under a stable key; after it, the result. A later
 * attempt (a retry, or a resume after kill -9) that finds a result returns it without calling
 * again; one that finds only the intent knows the outcome is unknown and says so to the call,
 * which passes the key to the external system so that system can refuse a duplicate.
 */
import { toolCalls as tools, type SmithersDb } from "../db/index.ts";
import { errorToJson, SmithersError } from "../errors/index.ts";
import type { ToolCallReport } from "./events.ts";

export type SideEffectCall = {
  /** `runId:nodeId:iteration:name`: the same on every attempt and every resume. */
  key: string;
  /** A previous attempt recorded the intent but died before recording the result. */
  uncertain: boolean;
};

export type SideEffectFn = <T>(name: string, fn: (call: SideEffectCall) => T | Promise<T>, options?: { input?: unknown }) => Promise<T>;

export type SideEffectScope = {
  db: SmithersDb;
  runId: string;
  nodeId: string;
  iteration: number;
  attempt: number;
  idempotencyKey: string;
  now: () => number;
  /** Told when a call is recorded, for the run's event journal. */
  onRecorded?: (event: ToolCallReport) => void;
  /**
   * The attempt's signal. Once the attempt is stopped (timeout, cancel) a body that ignores it
   * may still reach sideEffect while a retry runs the same key: a stopped attempt starts none.
   */
  signal?: AbortSignal;
};

function throwIfStopped(scope: SideEffectScope, name: string): void {
  if (!scope.signal?.aborted) return;
  const reason = scope.signal.reason;
  throw SmithersError.is(reason)
    ? reason
    : new SmithersError("TASK_CANCELLED", `Side effect "${name}" was not started: its attempt was stopped`, { nodeId: scope.nodeId, attempt: scope.attempt });
}

export function createSideEffect(scope: SideEffectScope): SideEffectFn {
  return async <T>(name: string, fn: (call: SideEffectCall) => T | Promise<T>, options: { input?: unknown } = {}): Promise<T> => {
    if (!name) throw new SmithersError("INVALID_WORKFLOW", "sideEffect needs a name that is unique within the task");
    throwIfStopped(scope, name);
    const key = `${scope.idempotencyKey}:${name}`;
    const previous = await tools.findToolCallByIdempotencyKey(scope.db, key);
    if (previous?.status === "succeeded") return (previous.outputJson === null ? undefined : JSON.parse(previous.outputJson)) as T;
    const ids = { runId: scope.runId, nodeId: scope.nodeId, iteration: scope.iteration, attempt: scope.attempt };
    const seq = await tools.startToolCall(scope.db, {
      ...ids,
      toolName: name,
      input: options.input,
      startedAtMs: scope.now(),
      sideEffect: true,
      idempotencyKey: key,
    });
    scope.onRecorded?.({ type: "ToolCallStarted", toolName: name });
    let value: T;
    try {
      throwIfStopped(scope, name); // stopped while the intent was being recorded: the call is not made
      value = await fn({ key, uncertain: previous?.status === "started" });
    } catch (error) {
      await tools.finishToolCall(scope.db, { ...ids, seq, finishedAtMs: scope.now(), error: errorToJson(error) });
      scope.onRecorded?.({ type: "ToolCallFinished", toolName: name, status: "failed" });
      throw error;
    }
    await tools.finishToolCall(scope.db, { ...ids, seq, finishedAtMs: scope.now(), output: value ?? null });
    scope.onRecorded?.({ type: "ToolCallFinished", toolName: name, status: "succeeded" });
    return value;
  };
}
