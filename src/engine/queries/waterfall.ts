/**
 * The run page's waterfall: when each attempt ran, how long the run waited for a worker, the
 * backoff between a failed attempt and its retry, and the waits (approval, timer, signal, human
 * answer) its tasks sat in. Read from the attempts (by the run's key) and the run's wait events
 * (by the run's key, filtered by type); built by a pure function so the bars are tested without a run.
 */
import { ENDED_RUN_STATUSES, type Waterfall, type WaterfallBar, type WaterfallKind } from "../../contract/index.ts";
import { attempts as attemptRows, events, type runs, type SmithersDb } from "../../db/index.ts";
import { addToTotals, NO_USAGE } from "../core/index.ts";
import { attemptError } from "./attempt-failures.ts";

/** Which event opens a wait of which kind; any of WAIT_ENDS for the same node closes it. */
const WAIT_STARTS: Record<string, WaterfallKind> = {
  ApprovalRequested: "approval",
  TimerScheduled: "timer",
  SignalWaiting: "signal",
  HumanRequested: "human",
};
const WAIT_ENDS = ["ApprovalDecided", "TimerFired", "SignalReceived", "HumanAnswered", "WaitTimedOut", "NodeCancelled", "NodeFailed"];
export const WAIT_EVENT_TYPES = [...Object.keys(WAIT_STARTS), ...WAIT_ENDS];

type RunTimes = { runId: string; status: string; createdAtMs: number; startedAtMs: number | null; finishedAtMs: number | null };
type AttemptTimes = attemptRows.AttemptRow;
type WaitEvent = { timestampMs: number; type: string; payloadJson: string };

const ENDED: ReadonlySet<string> = new Set(ENDED_RUN_STATUSES);
const key = (nodeId: string, iteration: number) => `${nodeId}#${iteration}`;

function payloadNode(json: string): { nodeId: string; iteration: number } | null {
  try {
    const p = JSON.parse(json) as { nodeId?: unknown; iteration?: unknown };
    return typeof p.nodeId === "string" ? { nodeId: p.nodeId, iteration: typeof p.iteration === "number" ? p.iteration : 0 } : null;
  } catch {
    return null;
  }
}

/** The bars from stored rows: pure, `nowMs` only sets where the axis ends while the run goes on. */
export function buildWaterfall(run: RunTimes, attempts: readonly AttemptTimes[], waitEvents: readonly WaitEvent[], nowMs: number): Waterfall {
  const bars: WaterfallBar[] = [];
  const bar = (b: Partial<WaterfallBar> & Pick<WaterfallBar, "kind" | "startMs" | "endMs">): WaterfallBar => ({
    nodeId: null,
    iteration: 0,
    attempt: null,
    state: null,
    error: null,
    usage: null,
    ...b,
  });
  if (run.startedAtMs === null) bars.push(bar({ kind: "queued", startMs: run.createdAtMs, endMs: null }));
  else if (run.startedAtMs > run.createdAtMs) bars.push(bar({ kind: "queued", startMs: run.createdAtMs, endMs: run.startedAtMs }));

  const byNode = new Map<string, AttemptTimes[]>();
  for (const a of attempts) byNode.set(key(a.nodeId, a.iteration), [...(byNode.get(key(a.nodeId, a.iteration)) ?? []), a]);
  for (const list of byNode.values()) {
    list.sort((x, y) => x.attempt - y.attempt);
    list.forEach((a, i) => {
      const usage = a.inputTokens !== null || a.outputTokens !== null || a.costUsd !== null ? addToTotals(NO_USAGE, a) : null;
      const ids = { nodeId: a.nodeId, iteration: a.iteration };
      bars.push(
        bar({
          ...ids,
          kind: "running",
          attempt: a.attempt,
          state: a.state,
          startMs: a.startedAtMs,
          endMs: a.finishedAtMs,
          usage,
          error: a.state === "failed" ? attemptError(a.errorJson) : null,
        }),
      );
      const next = list[i + 1];
      if (a.state === "failed" && next && a.finishedAtMs !== null && next.startedAtMs > a.finishedAtMs) {
        bars.push(bar({ ...ids, kind: "retry-wait", attempt: next.attempt, startMs: a.finishedAtMs, endMs: next.startedAtMs }));
      }
    });
  }

  const open = new Map<string, WaterfallBar>();
  for (const e of waitEvents) {
    const node = payloadNode(e.payloadJson);
    if (!node) continue;
    const k = key(node.nodeId, node.iteration);
    const kind = WAIT_STARTS[e.type];
    if (kind) {
      if (open.has(k)) continue; // the same wait announced again (a resume): it began at the first
      const b = bar({ ...node, kind, startMs: e.timestampMs, endMs: null });
      open.set(k, b);
      bars.push(b);
    } else {
      const b = open.get(k);
      if (b) b.endMs = e.timestampMs;
      open.delete(k);
    }
  }
  // A wait the run ended in without an answer closes with the run; a waiting run's wait goes on
  // (its finished_at_ms is when its last step ended, not the run).
  const ended = ENDED.has(run.status) ? run.finishedAtMs : null;
  if (ended !== null) for (const b of open.values()) b.endMs = ended;

  bars.sort((a, b) => a.startMs - b.startMs || WATERFALL_ORDER.indexOf(a.kind) - WATERFALL_ORDER.indexOf(b.kind));
  const fromMs = Math.min(run.createdAtMs, ...bars.map((b) => b.startMs));
  const ends = bars.map((b) => b.endMs ?? nowMs);
  const toMs = Math.max(ended ?? nowMs, ...ends);
  return { runId: run.runId, fromMs, toMs, bars };
}

const WATERFALL_ORDER: readonly WaterfallKind[] = ["queued", "retry-wait", "running", "approval", "timer", "signal", "human"];

/** GET /runs/:id/waterfall for a stored run. */
export async function runWaterfall(db: SmithersDb, run: runs.RunRow, nowMs = Date.now()): Promise<Waterfall> {
  const [attempts, waits] = await Promise.all([
    attemptRows.listAttempts(db, run.runId),
    events.listEventHistory(db, { runId: run.runId, types: WAIT_EVENT_TYPES }),
  ]);
  return buildWaterfall(run, attempts, waits, nowMs);
}
