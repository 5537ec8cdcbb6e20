/**
 * The retry policy: how many times a failed task runs again, and how long it waits before each
 * attempt. Pure; the props are checked at render (src/jsx/retry-props.ts).
 */
import type { PlanTask, RetryPolicy } from "../../jsx/index.ts";
import { DEFAULT_RETRY_FACTOR, DEFAULT_RETRY_POLICY, DEFAULT_TASK_RETRIES, MAX_RETRY_DELAY_MS, MAX_TIMER_MS } from "../core/index.ts";

/**
 * Retries a task gets after failed attempts: its `retries` (0 with `noRetry`), else 0 for a
 * static output (it would fail the same way again) and a `<Subflow>` (its child's tasks retry
 * themselves; a retry resumes the child), else DEFAULT_TASK_RETRIES.
 */
export function retryBudget(task: Pick<PlanTask, "retries" | "mode">): number {
  if (task.retries !== undefined) return task.retries;
  return task.mode === "static" || task.mode === "subflow" ? 0 : DEFAULT_TASK_RETRIES;
}

/**
 * The wait in ms before the next attempt after `failures` failed ones (1 before the first
 * retry): the error's `retryAfterMs` when it gave one (uncapped by the policy), else the task's backoff, at most its
 * `maxDelayMs` (default MAX_RETRY_DELAY_MS). Without a policy: exponential from 1 s.
 *
 * @example
 * retryDelay({ backoff: "linear", initialDelayMs: 100 }, 3); // 300
 */
export function retryDelay(policy: RetryPolicy | undefined, failures: number, retryAfterMs?: number): number {
  // A wait it cannot mean (NaN) is ignored; one past the longest timer is that timer (about 24.8 days).
  if (retryAfterMs !== undefined && !Number.isNaN(retryAfterMs)) return Math.min(Math.max(0, retryAfterMs), MAX_TIMER_MS);
  const p: RetryPolicy = policy ?? DEFAULT_RETRY_POLICY;
  const initial = p.initialDelayMs ?? 0;
  const n = Math.max(1, failures);
  const backoff = p.backoff ?? (p.factor === undefined ? "fixed" : "exponential");
  const delay = backoff === "fixed" ? initial : backoff === "linear" ? initial * n : initial * (p.factor ?? DEFAULT_RETRY_FACTOR) ** (n - 1);
  // 0 * Infinity (no delay, a huge exponent) is NaN: no delay.
  return Number.isNaN(delay) ? 0 : Math.min(delay, p.maxDelayMs ?? MAX_RETRY_DELAY_MS);
}
