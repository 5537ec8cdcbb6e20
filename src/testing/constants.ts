/** Where a test's virtual clock starts unless `startAt` says otherwise: 2026-01-01T00:00:00Z. */
export const DEFAULT_START_AT_MS = Date.UTC(2026, 0, 1);

/**
 * Turns of the event loop in a row in which nothing moved (no clock read, no timer set, no event)
 * before the kit takes the process as quiet. The engine's steps resolve as microtasks (SQLite is
 * synchronous), so one turn without activity already means it waits; three leave a margin.
 */
export const QUIET_TURNS = 3;

/** Timers the clock fires in one advance at most: a workflow that keeps setting due timers fails instead of hanging. */
export const MAX_FIRINGS_PER_ADVANCE = 100_000;
