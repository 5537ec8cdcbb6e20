/**
 * Exactly-once side effects across retries and crashes. Before an irreversible call the intent
 * is committed to `_smithers_tool_calls` under a stable key; after it, the result. A later
 * attempt (a retry, or a resume after kill -9) that finds a result returns it without calling
 * again; one that finds only the intent knows the outcome is unknown and says so to the call,
 * which passes the key to the external system so that system can refuse a duplicate.
 */
import type { SmithersDb } from "../../db/index.ts";
import { SmithersError } from "../../errors/index.ts";
import { outcomeUnknown, previousCall, recordedCall, recordedResult, throwIfStopped } from "../../tools/index.ts";
import type { ToolCallReport } from "../core/index.ts";

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

export function createSideEffect(scope: SideEffectScope): SideEffectFn {
  return async <T>(name: string, fn: (call: SideEffectCall) => T | Promise<T>, options: { input?: unknown } = {}): Promise<T> => {
    if (!name) throw new SmithersError("INVALID_WORKFLOW", "sideEffect needs a name that is unique within the task");
    throwIfStopped(scope, `Side effect "${name}"`);
    const key = `${scope.idempotencyKey}:${name}`;
    const previous = await previousCall(scope.db, key);
    // The name alone identifies the call (its input is only recorded): a recorded result is returned.
    const recorded = recordedResult(previous);
    if (recorded) return recorded.output as T;
    const uncertain = outcomeUnknown(previous);
    return recordedCall(scope, { toolName: name, input: options.input, sideEffect: true, idempotencyKey: key }, () => fn({ key, uncertain }));
  };
}
