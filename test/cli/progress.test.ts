import { describe, expect, test } from "bun:test";
import { formatEvent, newProgress, renderProgress, trackProgress } from "../../src/cli/progress.ts";
import type { SmithersEvent } from "../../src/engine/index.ts";
import { progressText } from "../../src/contract/index.ts";

describe("formatEvent", () => {
  test("a task finished from the cache says so after its duration", () => {
    const finished = { type: "NodeFinished", runId: "r", timestampMs: 1, nodeId: "analyze", iteration: 0, attempt: 1, durationMs: 3 } as const;
    expect(formatEvent(finished)).toBe("finish  analyze iter=0 attempt=1 3ms");
    expect(formatEvent({ ...finished, cached: true })).toBe("finish  analyze iter=0 attempt=1 3ms (cached)");
  });
});

describe("progressText", () => {
  test("counts only finished and skipped tasks as done, so a failed run with 3 of 5 done reads 3/5 and says what failed", () => {
    expect(progressText({ done: 5, failed: 0, total: 5 })).toBe("5/5");
    expect(progressText({ done: 3, failed: 2, total: 5 })).toBe("3/5 (2 failed)");
    expect(progressText({ done: 0, failed: 0, total: 0 })).toBe("0/0");
  });
});

describe("renderProgress", () => {
  test("up's status line counts a failed task apart, not as done", () => {
    const state = newProgress(0);
    const node = (type: string, nodeId: string) => ({ type, runId: "r", timestampMs: 1, nodeId, iteration: 0, attempt: 1 }) as unknown as SmithersEvent;
    for (const e of [node("NodeStarted", "a"), node("NodeFinished", "a"), node("NodeStarted", "b"), node("NodeFailed", "b"), node("NodeStarted", "c")]) {
      trackProgress(state, e);
    }
    expect(renderProgress(state, 2_000)).toBe("1/3 tasks done, 1 failed, 1 running (c), 2.0s");
  });
});
