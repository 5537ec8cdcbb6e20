import type { EventOf, SmithersEvent } from "../engine/index.ts";

type NodeEvent = EventOf<"NodeStarted" | "NodeFinished" | "NodeFailed" | "NodeRetrying" | "NodeSkipped" | "NodeCancelled" | "NodeAbandoned" | "AgentFallback">;

const where = (e: NodeEvent) => `${e.nodeId} iter=${e.iteration}${"attempt" in e ? ` attempt=${e.attempt}` : ""}`;
const took = (e: NodeEvent) => ("durationMs" in e ? ` ${e.durationMs}ms` : "");

/** One progress line per task start/finish (and the other node outcomes); null for events not shown. */
export function formatEvent(e: SmithersEvent): string | null {
  switch (e.type) {
    case "NodeStarted":
      return `start   ${where(e)}`;
    case "NodeFinished":
      return `finish  ${where(e)}${took(e)}${e.cached ? " (cached)" : ""}`;
    case "NodeFailed":
      return `fail    ${where(e)}${took(e)} ${String(e.error.code ?? "")}: ${String(e.error.message ?? "")}`;
    case "NodeRetrying":
      return `retry   ${where(e)} in ${e.delayMs}ms`;
    case "AgentFallback":
      return `fallback ${where(e)}: agent ${e.fromAgent ?? e.fromIndex} ${e.code}, now agent ${e.toAgent ?? e.toIndex}`;
    case "NodeSkipped":
      return `skip    ${where(e)}`;
    case "NodeCancelled":
      return `cancel  ${where(e)}${took(e)}`;
    case "NodeAbandoned":
      return e.reason === "process-died"
        ? `abandon ${where(e)}: its process died while it ran`
        : `abandon ${where(e)}: its body did not stop in time and may still be running`;
    case "ApprovalRequested":
      return `approve ${e.nodeId} iter=${e.iteration}: waiting for a decision: ${e.title}`;
    case "ApprovalDecided":
      return `decided ${e.nodeId} iter=${e.iteration}: ${e.approved ? "approved" : "denied"}${e.decidedBy ? ` by ${e.decidedBy}` : ""}`;
    case "TimerScheduled":
      return `timer   ${e.nodeId} iter=${e.iteration}: fires at ${new Date(e.fireAtMs).toISOString()}`;
    case "TimerFired":
      return `timer   ${e.nodeId} iter=${e.iteration}: fired${e.firedLateMs > 1_000 ? ` ${Math.round(e.firedLateMs / 1000)} s late` : ""}`;
    case "SignalWaiting":
      return `signal  ${e.nodeId} iter=${e.iteration}: waiting for "${e.signalName}"${e.correlationId === null ? "" : ` (correlation id ${e.correlationId})`}`;
    case "SignalReceived":
      return `signal  ${e.nodeId} iter=${e.iteration}: took "${e.signalName}" (seq ${e.seq})`;
    case "SignalRejected":
      return `signal  ${e.nodeId} iter=${e.iteration}: refused "${e.signalName}" (seq ${e.seq}): ${String(e.error.message ?? "")}`;
    case "WaitTimedOut":
      return `timeout ${e.nodeId} iter=${e.iteration}: stopped waiting (${e.outcome})`;
    case "HumanRequested":
      return `human   ${e.nodeId} iter=${e.iteration}: waiting for an answer to ${e.requestId}`;
    case "HumanAnswered":
      return `human   ${e.nodeId} iter=${e.iteration}: ${e.accepted ? "answered" : "answer refused, asking again"}${e.answeredBy ? ` by ${e.answeredBy}` : ""}`;
    case "SubflowWaiting":
      // The child's own waits are addressed by its run id (a signal, for one): say which it is.
      return `subflow ${e.nodeId} iter=${e.iteration}: child run ${e.childRunId} is ${e.childStatus}`;
    case "LoopAdvanced":
      return `loop    ${e.loopId} iter=${e.iteration}`;
    case "NodeOutput": {
      // The agent's words as they come, one line each (a long piece shown by its start).
      const first = e.text.trim().split("\n")[0] ?? "";
      const shown = first.length > 160 ? `${first.slice(0, 159)}…` : first;
      return shown === "" ? null : `${e.stream === "tool" ? "tool   " : "agent  "} ${e.nodeId}: ${shown}`;
    }
    case "RunContinuedAsNew":
      return `continue run ${e.runId} continued as run ${e.newRunId} (iter=${e.iteration})`;
    default:
      return null;
  }
}

/** A run's usage as one line: tokens in (cached) and out, and the cost when known. */
export function formatUsage(u: { inputTokens: number; cachedInputTokens: number; outputTokens: number; costUsd: number | null }): string {
  const cost = u.costUsd === null ? "cost unknown" : `$${u.costUsd.toFixed(4)}`;
  return `usage ${u.inputTokens} input tokens (${u.cachedInputTokens} cached), ${u.outputTokens} output tokens, ${cost}`;
}

/** What the terminal status line of `up` shows, updated from the run's events. */
export type ProgressState = {
  startedAtMs: number;
  /** Tasks seen so far (node#iteration), those that ended, and of those the ones that failed (or were cancelled, abandoned). */
  seen: Set<string>;
  ended: Set<string>;
  failed: Set<string>;
  running: Set<string>;
};

export const newProgress = (startedAtMs: number): ProgressState => ({
  startedAtMs,
  seen: new Set(),
  ended: new Set(),
  failed: new Set(),
  running: new Set(),
});

const ENDING = new Set(["NodeFinished", "NodeFailed", "NodeSkipped", "NodeCancelled", "NodeAbandoned"]);
const FAILING = new Set(["NodeFailed", "NodeCancelled", "NodeAbandoned"]);

/** Folds one event into the state (mutating it, for the one renderer that owns it). */
export function trackProgress(state: ProgressState, e: SmithersEvent): ProgressState {
  if (!("nodeId" in e) || !("iteration" in e) || !e.type.startsWith("Node")) return state;
  const key = `${e.nodeId}#${e.iteration}`;
  state.seen.add(key);
  if (e.type === "NodeStarted") state.running.add(key);
  else if (ENDING.has(e.type) || e.type === "NodeRetrying") {
    state.running.delete(key);
    if (ENDING.has(e.type)) state.ended.add(key);
    if (FAILING.has(e.type)) state.failed.add(key);
    else state.failed.delete(key); // a task run again (a resume) is judged by its last end
  }
  return state;
}

/**
 * The status line: tasks done/seen (as ps counts them: a failed or cancelled task is not done, and
 * is counted apart), the running ones (their ids, the first few), elapsed seconds. Fits `width` columns.
 */
export function renderProgress(state: ProgressState, nowMs: number, width = 100): string {
  const ids = [...state.running].map((k) => k.replace(/#0$/, ""));
  const shown = ids.slice(0, 3).join(", ") + (ids.length > 3 ? ` +${ids.length - 3}` : "");
  const elapsed = ((nowMs - state.startedAtMs) / 1000).toFixed(1);
  const done = state.ended.size - state.failed.size;
  const failed = state.failed.size > 0 ? `, ${state.failed.size} failed` : "";
  const line = `${done}/${state.seen.size} tasks done${failed}, ${ids.length} running${ids.length ? ` (${shown})` : ""}, ${elapsed}s`;
  return line.length > width ? `${line.slice(0, Math.max(0, width - 1))}…` : line;
}

/** Redraws the terminal's current line: carriage return and erase-line, then the text. */
export const redraw = (text: string): string => `\r\x1b[K${text}`;
