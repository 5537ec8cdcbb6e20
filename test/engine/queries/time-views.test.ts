import { describe, expect, test } from "bun:test";
import { bucketRunTimes, buildWaterfall } from "../../../src/engine/index.ts";

const attempt = (nodeId: string, n: number, state: string, startedAtMs: number, finishedAtMs: number | null) =>
  ({
    runId: "r",
    nodeId,
    iteration: 0,
    attempt: n,
    state,
    startedAtMs,
    finishedAtMs,
    heartbeatAtMs: null,
    errorJson: state === "failed" ? JSON.stringify({ code: "TASK_FAILED", message: "boom" }) : null,
    cached: false,
    metaJson: null,
    responseText: null,
    inputTokens: null,
    cachedInputTokens: null,
    outputTokens: null,
    costUsd: null,
    agentModel: null,
    agentPid: null,
    agentPidStart: null,
  }) as const;
const event = (timestampMs: number, type: string, nodeId: string) => ({ timestampMs, type, payloadJson: JSON.stringify({ nodeId, iteration: 0 }) });

describe("buildWaterfall", () => {
  test("a run that waited for a worker starts with a queued bar up to its start", () => {
    const w = buildWaterfall(
      { runId: "r", status: "finished", createdAtMs: 0, startedAtMs: 40, finishedAtMs: 100 },
      [attempt("a", 1, "finished", 50, 90)],
      [],
      1000,
    );
    expect(w.bars.map((b) => [b.kind, b.startMs, b.endMs])).toEqual([
      ["queued", 0, 40],
      ["running", 50, 90],
    ]);
    expect([w.fromMs, w.toMs]).toEqual([0, 100]);
  });

  test("a failed attempt carries its error, and the gap to the next attempt is a retry wait for that attempt", () => {
    const w = buildWaterfall(
      { runId: "r", status: "finished", createdAtMs: 0, startedAtMs: 0, finishedAtMs: 300 },
      [attempt("a", 2, "finished", 200, 250), attempt("a", 1, "failed", 0, 100)],
      [],
      1000,
    );
    expect(w.bars.map((b) => [b.kind, b.attempt, b.startMs, b.endMs])).toEqual([
      ["running", 1, 0, 100],
      ["retry-wait", 2, 100, 200],
      ["running", 2, 200, 250],
    ]);
    expect(w.bars[0]?.error).toEqual({ code: "TASK_FAILED", message: "boom" });
  });

  test("timer and signal waits run from their start event to the one that ends them; one still waiting stays open", () => {
    const w = buildWaterfall(
      { runId: "r", status: "waiting-event", createdAtMs: 0, startedAtMs: 0, finishedAtMs: 120 },
      [],
      [event(10, "TimerScheduled", "sleep"), event(60, "TimerFired", "sleep"), event(70, "SignalWaiting", "hook"), event(90, "SignalWaiting", "hook")],
      500,
    );
    expect(w.bars.map((b) => [b.kind, b.nodeId, b.startMs, b.endMs])).toEqual([
      ["timer", "sleep", 10, 60],
      ["signal", "hook", 70, null],
    ]);
    expect(w.toMs).toBe(500); // a run still waiting: the axis reaches now
  });

  test("a wait the run ended in closes when the run did", () => {
    const w = buildWaterfall(
      { runId: "r", status: "cancelled", createdAtMs: 0, startedAtMs: 0, finishedAtMs: 80 },
      [],
      [event(10, "ApprovalRequested", "gate")],
      500,
    );
    expect(w.bars.map((b) => [b.kind, b.endMs])).toEqual([["approval", 80]]);
    expect(w.toMs).toBe(80);
  });
});

describe("bucketRunTimes", () => {
  test("counts each run's start in its minute and its end as finished or failed, over exactly the window's minutes", () => {
    const now = 10 * 60_000 + 5_000;
    const rows = [
      { status: "finished", startedAtMs: 9 * 60_000 + 1, finishedAtMs: 10 * 60_000 + 2 },
      { status: "failed", startedAtMs: 9 * 60_000 + 500, finishedAtMs: 9 * 60_000 + 900 },
      { status: "running", startedAtMs: 10 * 60_000, finishedAtMs: null },
      { status: "waiting-timer", startedAtMs: 2 * 60_000, finishedAtMs: 9 * 60_000 }, // outside the window; a step's end is not the run's
    ];
    const m = bucketRunTimes(rows, now, 3);
    expect(m.map((x) => [x.minuteMs / 60_000, x.started, x.finished, x.failed])).toEqual([
      [8, 0, 0, 0],
      [9, 2, 0, 1],
      [10, 1, 1, 0],
    ]);
  });
});
