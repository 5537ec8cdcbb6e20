import { describe, expect, test } from "bun:test";
import { retryDelay } from "../../src/engine/run-workflow.ts";

describe("retryDelay", () => {
  test("grows exponentially from 250 ms by default and caps at 10 s", () => {
    expect([1, 2, 3, 4, 7, 20].map((n) => retryDelay(undefined, n))).toEqual([250, 500, 1_000, 2_000, 10_000, 10_000]);
  });

  test("follows a task's retryPolicy", () => {
    const policy = { initialDelayMs: 10, factor: 3, maxDelayMs: 100 };
    expect([1, 2, 3, 4].map((n) => retryDelay(policy, n))).toEqual([10, 30, 90, 100]);
  });

  test("a field passed as undefined keeps its default instead of becoming NaN", () => {
    expect(retryDelay({ initialDelayMs: undefined, maxDelayMs: 400 }, 3)).toBe(400);
    expect(retryDelay({ initialDelayMs: 5, factor: undefined }, 2)).toBe(10);
  });

  test("a RetryableError's retryAfterMs wins over the backoff", () => {
    expect(retryDelay({ initialDelayMs: 10 }, 5, 1_234)).toBe(1_234);
  });
});
