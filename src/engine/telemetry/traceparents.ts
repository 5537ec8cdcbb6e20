/**
 * The attempts whose span is open in this process, written by the span observer: their W3C
 * `traceparent` (a coding-agent CLI the attempt calls gets it as TRACEPARENT) and a recorder for
 * the attempt's agent calls. No OpenTelemetry import: with tracing off the map stays empty and a
 * lookup finds nothing.
 */

/** One agent call of an attempt, as generateStructured reports it. */
export type AgentCallReport = {
  startMs: number;
  endMs: number;
  agentId?: string;
  /** The model asked for, when the agent names one in its options. */
  requestModel?: string;
  usage?: { inputTokens?: number; cachedInputTokens?: number; outputTokens?: number; costUsd?: number; model?: string };
  error?: unknown;
};

export type TracedAttempt = { traceparent: string; agentCall(report: AgentCallReport): void };

const OPEN = new Map<string, TracedAttempt>();

const keyOf = (runId: string, nodeId: string, iteration: number) => `${runId}\u0000${nodeId}\u0000${iteration}`;

export function setTracedAttempt(runId: string, nodeId: string, iteration: number, traced: TracedAttempt | undefined): void {
  if (traced === undefined) OPEN.delete(keyOf(runId, nodeId, iteration));
  else OPEN.set(keyOf(runId, nodeId, iteration), traced);
}

/** The attempt of `nodeId` at `iteration` in `runId`, while its span is open here. */
export function tracedAttempt(runId: string, nodeId: string, iteration: number): TracedAttempt | undefined {
  return OPEN.size === 0 ? undefined : OPEN.get(keyOf(runId, nodeId, iteration));
}
