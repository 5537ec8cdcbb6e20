/**
 * Spans built from a run's events, through `@opentelemetry/api` only: whichever SDK the process
 * registered (the CLI's, from the OTEL_* variables, or a library user's own) receives them. This
 * module is loaded only once a tracer provider is registered (see index.ts): with none, the engine
 * never imports it.
 *
 * One run span per process that executes part of the run (from RunStarted/RunResumed to the run
 * ending or stopping to wait), an attempt span per NodeStarted under it, tool-call spans under the
 * attempt (GenAI `execute_tool`), and wait spans (approval, timer, signal, human) under the run.
 */
import {
  type Context,
  isSpanContextValid,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Tracer,
} from "@opentelemetry/api";
import { runAnchorSpanIdOf, traceIdOf } from "./trace-ids.ts";
import { type AgentCallReport, setTracedAttempt, setTracedRun } from "./traceparents.ts";

/** The tracer's name: the instrumentation scope backends group these spans by. */
export const TRACER_NAME = "smithers-workflows";

/** What the bus carries (the run room's BusEvent, restated so this room imports no other). */
type BusEvent = { type: string; runId: string; timestampMs: number; [key: string]: unknown };
type Bus = { on(listener: (event: BusEvent) => void): () => void };
/** `workflow` is read again as the run goes: a workflow's name is known once its first render named it. */
export type TracedRun = { runId: string; workflow: () => string; traceParent?: string };

/** Open attempt spans of every run this process executes, so a subflow's run finds its parent's task span. */
const openAttempts = new Map<string, Span>();
const attemptKey = (runId: string, nodeId: string, iteration: number) => `${runId}\u0000${nodeId}\u0000${iteration}`;

const WAIT_START: Record<string, { kind: string; ends: readonly string[] }> = {
  ApprovalRequested: { kind: "approval", ends: ["ApprovalDecided"] },
  TimerScheduled: { kind: "timer", ends: ["TimerFired"] },
  SignalWaiting: { kind: "signal", ends: ["SignalReceived"] },
  HumanRequested: { kind: "human", ends: ["HumanAnswered"] },
};
const WAIT_END = new Map(Object.entries(WAIT_START).flatMap(([, w]) => w.ends.map((e) => [e, w.kind] as const)));

const RUN_END: Record<string, string> = {
  RunFinished: "finished",
  RunFailed: "failed",
  RunCancelled: "cancelled",
  RunContinuedAsNew: "continued",
};

function errorMessage(error: unknown): { type: string; message: string; stack?: string } {
  const e = (typeof error === "object" && error !== null ? error : {}) as Record<string, unknown>;
  const type = typeof e.code === "string" ? e.code : typeof e.name === "string" ? e.name : "Error";
  const message = typeof e.message === "string" ? e.message : JSON.stringify(error);
  return { type, message, ...(typeof e.stack === "string" ? { stack: e.stack } : {}) };
}

function fail(span: Span, error: unknown, at: number): void {
  const { type, message, stack } = errorMessage(error);
  span.recordException({ name: type, message, ...(stack ? { stack } : {}) }, at);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
  span.setAttribute("error.type", type);
}

const traceparentOf = (c: SpanContext) => `00-${c.traceId}-${c.spanId}-0${c.traceFlags & TraceFlags.SAMPLED}`;

/** A stored W3C traceparent read back (version 00); undefined when it is not one. */
function parseTraceparent(text: string | undefined): SpanContext | undefined {
  const m = text === undefined ? null : /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(text);
  if (!m) return undefined;
  const context = { traceId: m[1]!, spanId: m[2]!, traceFlags: Number.parseInt(m[3]!, 16) & TraceFlags.SAMPLED, isRemote: true };
  return isSpanContextValid(context) ? context : undefined;
}

/** A subflow's parent task span, when it is open in this process (a subflow's run id is `parent/node#iteration`). */
function openParentAttempt(runId: string): Span | undefined {
  const match = /^(.*)\/([^/]+)#(\d+)$/.exec(runId);
  return match ? openAttempts.get(attemptKey(match[1]!, match[2]!, Number(match[3]))) : undefined;
}

/** The run's anchor: the trace and span id derived from its run id. */
const anchorOf = (runId: string): SpanContext => ({
  traceId: traceIdOf(runId),
  spanId: runAnchorSpanIdOf(runId),
  traceFlags: TraceFlags.SAMPLED,
  isRemote: true,
});

/**
 * The context the run's spans start from: the trace context stored with the run, else its parent
 * task's span when that is open here, else the run's anchor.
 */
function parentContext(runId: string, stored: string | undefined): Context {
  const from = parseTraceparent(stored);
  if (from) return trace.setSpanContext(ROOT_CONTEXT, from);
  const parentAttempt = openParentAttempt(runId);
  if (parentAttempt) return trace.setSpan(ROOT_CONTEXT, parentAttempt);
  return trace.setSpanContext(ROOT_CONTEXT, anchorOf(runId));
}

/**
 * Captures, before a run is created, what its trace context will be: a subflow's parent task span
 * when open here, else the caller's active span (a library user's request span, say), else the
 * anchor derived from the run id.
 */
export function captureTraceParent(): (runId: string) => string | undefined {
  const active = trace.getActiveSpan()?.spanContext();
  return (runId) => {
    const parentAttempt = openParentAttempt(runId);
    if (parentAttempt) return traceparentOf(parentAttempt.spanContext());
    return traceparentOf(active && isSpanContextValid(active) ? active : anchorOf(runId));
  };
}

/** A GenAI `chat` span for one agent call of an attempt: model, token usage and cost. */
function agentCallSpan(tracer: Tracer, attempt: Span, ids: Record<string, string | number>, report: AgentCallReport): void {
  const { usage } = report;
  const model = report.requestModel ?? usage?.model;
  const attributes: Record<string, string | number> = { ...ids, "gen_ai.operation.name": "chat" };
  if (model !== undefined) attributes["gen_ai.request.model"] = model;
  if (usage?.model !== undefined) attributes["gen_ai.response.model"] = usage.model;
  if (report.agentId !== undefined) attributes["gen_ai.agent.name"] = report.agentId;
  if (usage?.inputTokens !== undefined) attributes["gen_ai.usage.input_tokens"] = usage.inputTokens;
  if (usage?.outputTokens !== undefined) attributes["gen_ai.usage.output_tokens"] = usage.outputTokens;
  if (usage?.cachedInputTokens !== undefined) attributes["gen_ai.usage.cache_read.input_tokens"] = usage.cachedInputTokens;
  if (usage?.costUsd !== undefined) attributes["smithers.cost_usd"] = usage.costUsd;
  const span = tracer.startSpan(
    model === undefined ? "chat" : `chat ${model}`,
    { startTime: report.startMs, attributes },
    trace.setSpan(ROOT_CONTEXT, attempt),
  );
  if (report.error !== undefined) fail(span, report.error, report.endMs);
  span.end(report.endMs);
}

/**
 * Subscribes a tracing observer to a run's bus; returns the unsubscribe function.
 * @example
 * traceRun(bus, { runId, workflow: () => "deploy" });
 */
export function traceRun(bus: Bus, info: TracedRun, tracer: Tracer = trace.getTracer(TRACER_NAME)): () => void {
  let runSpan: Span | undefined;
  let runCtx: Context = ROOT_CONTEXT;
  let named = "";
  const nameRun = (span: Span) => {
    const name = info.workflow();
    if (name === named) return;
    named = name;
    span.updateName(`smithers.run ${name}`);
    span.setAttribute("smithers.workflow", name);
  };
  const attempts = new Map<string, Span>();
  const tools = new Map<string, { name: string; span: Span }[]>();
  const waits = new Map<string, Span>();

  const closeOpen = (at: number) => {
    for (const [key, span] of attempts) {
      span.setAttribute("smithers.outcome", "unfinished");
      span.end(at);
      openAttempts.delete(key);
      const [, nodeId = "", iteration = "0"] = key.split("\u0000");
      setTracedAttempt(info.runId, nodeId, Number(iteration), undefined);
    }
    attempts.clear();
    for (const stack of tools.values()) for (const { span } of stack) span.end(at);
    tools.clear();
    for (const span of waits.values()) {
      span.setAttribute("smithers.wait.pending", true);
      span.end(at);
    }
    waits.clear();
  };

  let lastAt = 0;
  const onEvent = (event: BusEvent): void => {
    const at = event.timestampMs;
    lastAt = at;
    const e = event as BusEvent & { nodeId: string; iteration: number; attempt: number; error?: unknown };
    if (event.type === "RunStarted" || event.type === "RunResumed") {
      runSpan = tracer.startSpan(
        "smithers.run",
        {
          kind: SpanKind.INTERNAL,
          startTime: at,
          attributes: { "smithers.run_id": info.runId, "smithers.resumed": event.type === "RunResumed" },
        },
        parentContext(info.runId, info.traceParent),
      );
      nameRun(runSpan);
      runCtx = trace.setSpan(ROOT_CONTEXT, runSpan);
      setTracedRun(info.runId, traceparentOf(runSpan.spanContext()));
      return;
    }
    if (!runSpan) return; // a finished run read back: nothing executes here
    const ended = RUN_END[event.type] ?? (event.type === "RunWaiting" ? String(event.status) : undefined);
    if (ended !== undefined) {
      closeOpen(at);
      nameRun(runSpan);
      runSpan.setAttribute("smithers.run.status", ended);
      if (event.type === "RunFailed") fail(runSpan, e.error, at);
      runSpan.end(at);
      runSpan = undefined;
      return;
    }
    const ids = { "smithers.run_id": info.runId, "smithers.node_id": e.nodeId, "smithers.iteration": e.iteration };
    const key = attemptKey(info.runId, e.nodeId, e.iteration);
    switch (event.type) {
      case "NodeStarted": {
        nameRun(runSpan);
        const span = tracer.startSpan(`smithers.attempt ${e.nodeId}`, { startTime: at, attributes: { ...ids, "smithers.attempt": e.attempt } }, runCtx);
        attempts.set(key, span);
        openAttempts.set(key, span);
        setTracedAttempt(info.runId, e.nodeId, e.iteration, {
          traceparent: traceparentOf(span.spanContext()),
          agentCall: (report) => agentCallSpan(tracer, span, { ...ids, "smithers.attempt": e.attempt }, report),
        });
        return;
      }
      case "NodeFinished":
      case "NodeFailed":
      case "NodeCancelled":
      case "NodeAbandoned": {
        const outcome = event.type.slice(4).toLowerCase();
        // An attempt abandoned by a dead process had its span in that process: this one marks where it was found.
        const span =
          attempts.get(key) ??
          tracer.startSpan(`smithers.attempt ${e.nodeId}`, { startTime: at, attributes: { ...ids, "smithers.attempt": e.attempt } }, runCtx);
        span.setAttribute("smithers.outcome", outcome);
        if (event.cached) span.setAttribute("smithers.cached", true);
        if (event.type === "NodeAbandoned") span.setAttribute("smithers.abandoned_reason", String(event.reason));
        if (e.error !== undefined) fail(span, e.error, at);
        for (const { span: tool } of tools.get(key) ?? []) tool.end(at);
        tools.delete(key);
        span.end(at);
        attempts.delete(key);
        openAttempts.delete(key);
        setTracedAttempt(info.runId, e.nodeId, e.iteration, undefined);
        return;
      }
      case "NodeRetrying":
        runSpan.addEvent("smithers.retry_scheduled", { ...ids, "smithers.attempt": e.attempt, "smithers.retry_at_ms": Number(event.retryAtMs) }, at);
        return;
      case "ToolCallStarted": {
        const parent = attempts.get(key);
        const name = String(event.toolName);
        const span = tracer.startSpan(
          `execute_tool ${name}`,
          { startTime: at, attributes: { ...ids, "smithers.attempt": e.attempt, "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name } },
          parent ? trace.setSpan(ROOT_CONTEXT, parent) : runCtx,
        );
        tools.set(key, [...(tools.get(key) ?? []), { name, span }]);
        return;
      }
      case "ToolCallFinished": {
        const stack = tools.get(key) ?? [];
        const i = stack.findIndex((t) => t.name === String(event.toolName));
        const span = stack.splice(i === -1 ? 0 : i, 1)[0]?.span;
        if (!span) return;
        span.setAttribute("smithers.tool.status", String(event.status));
        if (event.status === "failed") span.setStatus({ code: SpanStatusCode.ERROR });
        span.end(at);
        return;
      }
    }
    const wait = WAIT_START[event.type];
    if (wait) {
      waits.get(`${wait.kind}\u0000${key}`)?.end(at);
      const span = tracer.startSpan(`smithers.wait ${wait.kind}`, { startTime: at, attributes: { ...ids, "smithers.wait.kind": wait.kind } }, runCtx);
      waits.set(`${wait.kind}\u0000${key}`, span);
      return;
    }
    const waitKind = WAIT_END.get(event.type);
    if (waitKind) {
      const span = waits.get(`${waitKind}\u0000${key}`);
      if (!span) {
        // Requested by an earlier process: the wait's span ended there (pending); this one marks the end.
        runSpan.addEvent(`smithers.wait_ended ${waitKind}`, ids, at);
        return;
      }
      if (event.type === "ApprovalDecided") span.setAttribute("smithers.approval.approved", Boolean(event.approved));
      span.end(at);
      waits.delete(`${waitKind}\u0000${key}`);
    }
  };

  const off = bus.on(onEvent);
  return () => {
    off();
    // Spans still open when the run stops being observed end at its last event (the run's clock, not this process's).
    closeOpen(lastAt);
    runSpan?.end(lastAt);
  };
}
