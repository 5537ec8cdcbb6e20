import { describe, expect, test } from "bun:test";
import { formatEvent } from "../../src/cli/progress.ts";

describe("formatEvent", () => {
  test("a task finished from the cache says so after its duration", () => {
    const finished = { type: "NodeFinished", runId: "r", timestampMs: 1, nodeId: "analyze", iteration: 0, attempt: 1, durationMs: 3 } as const;
    expect(formatEvent(finished)).toBe("finish  analyze iter=0 attempt=1 3ms");
    expect(formatEvent({ ...finished, cached: true })).toBe("finish  analyze iter=0 attempt=1 3ms (cached)");
  });
});
