/**
 * The W3C `traceparent` of each attempt whose span is open in this process, written by the span
 * observer and read when an attempt calls a coding-agent CLI (which gets it as TRACEPARENT). No
 * OpenTelemetry import: with tracing off the map stays empty and a lookup finds nothing.
 */
const OPEN = new Map<string, string>();

const keyOf = (runId: string, nodeId: string, iteration: number) => `${runId}\u0000${nodeId}\u0000${iteration}`;

export function setAttemptTraceparent(runId: string, nodeId: string, iteration: number, traceparent: string | undefined): void {
  if (traceparent === undefined) OPEN.delete(keyOf(runId, nodeId, iteration));
  else OPEN.set(keyOf(runId, nodeId, iteration), traceparent);
}

/** The traceparent of the attempt of `nodeId` at `iteration` in `runId`, while its span is open here. */
export function attemptTraceparent(runId: string, nodeId: string, iteration: number): string | undefined {
  return OPEN.size === 0 ? undefined : OPEN.get(keyOf(runId, nodeId, iteration));
}
