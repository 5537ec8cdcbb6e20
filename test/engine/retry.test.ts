import { describe, expect, test } from "bun:test";
import { DEFAULT_TASK_RETRIES, MAX_RETRY_DELAY_MS } from "../../src/engine/core/constants.ts";
import { retryBudget, retryDelay } from "../../src/engine/schedule/retry.ts";

const delays = (policy: Parameters<typeof retryDelay>[0], ...failures: number[]) => failures.map((n) => retryDelay(policy, n));

describe("retryDelay", () => {
  test("without a policy: exponential from 1 s, capped at 5 min", () => {
    expect(delays(undefined, 1, 2, 3, 4, 9, 10, 1_000)).toEqual([1_000, 2_000, 4_000, 8_000, 256_000, 300_000, 300_000]);
    expect(MAX_RETRY_DELAY_MS).toBe(300_000);
  });

  test("fixed waits initialDelayMs every time", () => {
    expect(delays({ backoff: "fixed", initialDelayMs: 500 }, 1, 2, 3, 50)).toEqual([500, 500, 500, 500]);
  });

  test("linear waits initialDelayMs * n before the n-th retry", () => {
    expect(delays({ backoff: "linear", initialDelayMs: 500 }, 1, 2, 3, 4)).toEqual([500, 1_000, 1_500, 2_000]);
  });

  test("exponential waits initialDelayMs * 2^(n-1)", () => {
    expect(delays({ backoff: "exponential", initialDelayMs: 500 }, 1, 2, 3, 4)).toEqual([500, 1_000, 2_000, 4_000]);
  });

  test("a policy without backoff is fixed and without initialDelayMs waits nothing, as in smithers-orchestrator", () => {
    expect(delays({ initialDelayMs: 300 }, 1, 2, 3)).toEqual([300, 300, 300]);
    expect(delays({ backoff: "exponential" }, 1, 5)).toEqual([0, 0]);
    expect(delays({}, 1, 2)).toEqual([0, 0]);
  });

  test("factor sets the growth of exponential backoff, and alone implies it", () => {
    expect(delays({ initialDelayMs: 10, factor: 3, maxDelayMs: 100 }, 1, 2, 3, 4)).toEqual([10, 30, 90, 100]);
    expect(delays({ backoff: "exponential", initialDelayMs: 10, factor: 1 }, 1, 7)).toEqual([10, 10]);
  });

  test("maxDelayMs caps every backoff; 5 min when the policy gives none", () => {
    expect(delays({ backoff: "linear", initialDelayMs: 100, maxDelayMs: 250 }, 1, 2, 3)).toEqual([100, 200, 250]);
    expect(delays({ backoff: "fixed", initialDelayMs: 10 * 60_000 }, 1)).toEqual([300_000]);
    expect(delays({ backoff: "linear", initialDelayMs: 60_000 }, 100)).toEqual([300_000]);
  });

  test("stays a finite number however many failures there were (retries={Infinity})", () => {
    expect(retryDelay(undefined, 100_000)).toBe(300_000);
    expect(retryDelay({ backoff: "exponential", initialDelayMs: 0 }, 100_000)).toBe(0);
    expect(retryDelay({ backoff: "exponential", initialDelayMs: 1, maxDelayMs: 10 }, 5_000)).toBe(10);
  });

  test("a field passed as undefined keeps its default instead of becoming NaN", () => {
    expect(retryDelay({ backoff: "exponential", initialDelayMs: undefined, maxDelayMs: 400 }, 3)).toBe(0);
    expect(retryDelay({ initialDelayMs: 5, factor: undefined }, 2)).toBe(5);
    expect(retryDelay({ backoff: "exponential", initialDelayMs: 5, factor: undefined, maxDelayMs: undefined }, 2)).toBe(10);
  });

  test("a RetryableError's retryAfterMs wins over the backoff, uncapped", () => {
    expect(retryDelay({ initialDelayMs: 10 }, 5, 1_234)).toBe(1_234);
    expect(retryDelay(undefined, 1, 600_000)).toBe(600_000);
    expect(retryDelay(undefined, 1, -5)).toBe(0);
    expect(retryDelay(undefined, 1, Infinity)).toBe(2 ** 31 - 1);
    expect(retryDelay({ backoff: "fixed", initialDelayMs: 7 }, 1, Number.NaN)).toBe(7);
  });
});

describe("retryBudget", () => {
  test("a task's own retries (0 with noRetry, Infinity) win", () => {
    expect(retryBudget({ mode: "compute", retries: 0 })).toBe(0);
    expect(retryBudget({ mode: "static", retries: 2 })).toBe(2);
    expect(retryBudget({ mode: "agent", retries: Infinity })).toBe(Infinity);
  });

  test("by default compute and agent tasks retry 3 times; static outputs and subflows do not", () => {
    expect(DEFAULT_TASK_RETRIES).toBe(3);
    expect(retryBudget({ mode: "compute", retries: undefined })).toBe(3);
    expect(retryBudget({ mode: "agent", retries: undefined })).toBe(3);
    expect(retryBudget({ mode: "static", retries: undefined })).toBe(0);
    expect(retryBudget({ mode: "subflow", retries: undefined })).toBe(0);
  });
});
