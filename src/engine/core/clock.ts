/**
 * The engine's time: what it reads the time from and sets its timers with. The system's by
 * default; the test kit (smithers-workflows/testing) passes a virtual one it advances by hand.
 */

/** A timer set with a Clock; only that clock's clearTimeout takes it. */
export type ClockTimer = unknown;

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `fn` once, `ms` from now. */
  setTimeout(fn: () => void, ms: number): ClockTimer;
  clearTimeout(timer: ClockTimer): void;
}

/** Date.now and the runtime's timers. */
export const SYSTEM_CLOCK: Clock = {
  now: Date.now,
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (timer) => clearTimeout(timer as ReturnType<typeof setTimeout> | undefined),
};
