import { describe, expect, test } from "bun:test";
import { formatEvent } from "../../src/cli/progress.ts";
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
