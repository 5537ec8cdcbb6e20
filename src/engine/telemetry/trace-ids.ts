/**
 * A run's trace identity, derived from its run id, so every process that executes a part of the
 * run (the first `up`, a resume after a crash, a worker, a supervisor waking a wait) continues the
 * same trace without asking anyone: the trace id is a hash of the root run's id, and each run's
 * spans hang under a span id derived from the run id. A subflow's run id starts with its parent's
 * (`parent/node#iteration`), so a subflow lands in its parent's trace.
 */
import { sha256Hex as hex } from "../../json/index.ts"; // Bun's hasher: node:crypto would cost every process its load

/** The run a subflow chain starts from: the part of the run id before the first `/`. */
export function rootRunId(runId: string): string {
  const slash = runId.indexOf("/");
  return slash === -1 ? runId : runId.slice(0, slash);
}

/** 32 hex digits, never all zero (an all-zero id is invalid in W3C trace context). */
export function traceIdOf(runId: string): string {
  const id = hex(`smithers-trace:${rootRunId(runId)}`).slice(0, 32);
  return /^0+$/.test(id) ? `${id.slice(0, 31)}1` : id;
}

/** 16 hex digits: the span every part of the run is a child of. */
export function runAnchorSpanIdOf(runId: string): string {
  const id = hex(`smithers-run:${runId}`).slice(0, 16);
  return /^0+$/.test(id) ? `${id.slice(0, 15)}1` : id;
}

/**
 * Whether `value` is a W3C traceparent this version can continue: version 00, a trace id and a
 * parent span id that are not all zeros, and flags (lowercase hex throughout).
 */
export function isTraceparent(value: string): boolean {
  const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/.exec(value);
  return m !== null && !/^0+$/.test(m[1]!) && !/^0+$/.test(m[2]!);
}
