/**
 * Telemetry observes runs, it does not steer them. Metrics (prom-client, imported when metrics
 * are made) count the engine's events. Tracing has two halves:
 * - `traceRunIfEnabled`: the engine's one hook. It subscribes the span observer to a run's bus,
 *   but only once some SDK has registered a tracer provider with `@opentelemetry/api` (seen on the
 *   API's global slot without importing it); otherwise it returns undefined and nothing is loaded.
 * - `startTracingFromEnv`: what `up`, `worker`, `serve` and `supervise` call. With no OTLP
 *   endpoint in the environment it returns at once, loading nothing; otherwise it imports the SDK.
 * Other rooms enter this one only through this file.
 */
import { tracingFromEnv } from "./config.ts";

export { createMetrics, listenMetrics, type MetricsListener, type MetricsScrape, type SmithersMetrics } from "./metrics.ts";
export { OTLP_PROTOCOLS, TRACE_SAMPLERS, tracingFromEnv, type TracingConfig, type TracingSetting } from "./config.ts";
export { isTraceparent, rootRunId, runAnchorSpanIdOf, traceIdOf } from "./trace-ids.ts";
export { type AgentCallReport, spanIdsOf, type TracedAttempt, tracedAttempt } from "./traceparents.ts";

/** Where `@opentelemetry/api` (major version 1) keeps its registered globals. */
const OTEL_API_GLOBAL = Symbol.for("opentelemetry.js.api.1");

/** Whether any SDK registered a tracer provider in this process. */
export function tracerRegistered(): boolean {
  const slot = (globalThis as Record<symbol, { trace?: unknown } | undefined>)[OTEL_API_GLOBAL];
  return slot?.trace !== undefined;
}

type Bus = { on(listener: (event: { type: string; runId: string; timestampMs: number; [key: string]: unknown }) => void): () => void };

/**
 * Subscribes the span observer to a run's bus when a tracer provider is registered; undefined
 * (nothing loaded, nothing to await) when none is.
 * @example
 * const tracing = traceRunIfEnabled(bus, { runId, workflow: () => "deploy" });
 * if (tracing) await tracing;
 */
export function traceRunIfEnabled(bus: Bus, info: { runId: string; workflow: () => string; traceParent?: string }): Promise<() => void> | undefined {
  if (!tracerRegistered()) return undefined;
  return import("./trace-observer.ts").then((m) => m.traceRun(bus, info));
}

/**
 * For a run about to be created while a tracer is registered: what to store as its trace context,
 * given its id (the caller's active span, a subflow's parent task span, else the trace derived from
 * the run id). Undefined, with nothing loaded, when no tracer is registered. Called before the run
 * starts, so the caller's context is still the active one.
 * @example
 * const capture = traceParentOfNewRun();
 * const traceParentOf = capture ? await capture : undefined;
 */
export function traceParentOfNewRun(): Promise<(runId: string) => string | undefined> | undefined {
  if (!tracerRegistered()) return undefined;
  return import("./trace-observer.ts").then((m) => m.captureTraceParent());
}

export type Tracing = { shutdown(): Promise<void> };

/**
 * Starts exporting spans when the environment names an OTLP endpoint. Invalid OTEL_* values are
 * reported in one line through `warn` and tracing stays off; the command goes on either way.
 * @example
 * const tracing = await startTracingFromEnv(process.env, console.error);
 * try { await work(); } finally { await tracing?.shutdown(); }
 */
export async function startTracingFromEnv(env: Record<string, string | undefined>, warn: (line: string) => void): Promise<Tracing | undefined> {
  const setting = tracingFromEnv(env);
  if (setting.off) {
    if ("problems" in setting) warn(`smithers: traces are off: ${setting.problems.join("; ")}`);
    return undefined;
  }
  try {
    const { startSdk } = await import("./sdk.ts");
    return startSdk(setting.config, warn);
  } catch (error) {
    warn(`smithers: traces are off: the OpenTelemetry SDK did not start (${(error as Error)?.message ?? String(error)})`);
    return undefined;
  }
}
