/**
 * The runs and attempts whose span is open in this process, written by the span observer: their W3C
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

/** Each run's latest run span in this process, kept after it ends (for the line saying how it ended), the newest 1,000. */
const RUNS = new Map<string, string>();
const RUNS_KEPT = 1_000;

/** The run span of `runId` opened in this process (its traceparent). */
export function setTracedRun(runId: string, traceparent: string): void {
  RUNS.delete(runId);
  RUNS.set(runId, traceparent);
  if (RUNS.size > RUNS_KEPT) RUNS.delete(RUNS.keys().next().value!);
}

/**
 * The trace and span a log line about a run (and maybe one attempt) belongs to: the attempt's span
 * while it is open here, else the run's latest span here (open or ended); undefined when this
 * process opened none (or tracing is off).
 * @example
 * setTraceIdsProvider(spanIdsOf); // log lines about runs carry traceId and spanId
 */
export function spanIdsOf(about: { runId?: unknown; nodeId?: unknown; iteration?: unknown }): { traceId: string; spanId: string } | undefined {
  if (typeof about.runId !== "string" || RUNS.size === 0) return undefined;
  const attempt =
    typeof about.nodeId === "string" ? OPEN.get(keyOf(about.runId, about.nodeId, typeof about.iteration === "number" ? about.iteration : 0)) : undefined;
  const traceparent = attempt?.traceparent ?? RUNS.get(about.runId);
  if (traceparent === undefined) return undefined;
  const [, traceId = "", spanId = ""] = traceparent.split("-");
  return { traceId, spanId };
}
