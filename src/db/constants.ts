/** Write-retry policy from the data-model spec: 6 retries, 50 ms doubling, 2 s cap, ±25 % jitter. */
export const DB_RETRY_POLICY = {
  retries: 6,
  baseDelayMs: 50,
  maxDelayMs: 2_000,
  jitter: 0.25,
} as const;

export type DbRetryPolicy = { retries: number; baseDelayMs: number; maxDelayMs: number; jitter: number };

/**
 * How long one try waits for another connection's write lock before the retry policy counts it
 * busy. The wait is asynchronous (see DB_SYNC_BUSY_TIMEOUT_MS), so with the spec's 6 retries a
 * write tolerates a held lock for about 7 x 1 s + 3.15 s of backoff, roughly 10 s.
 */
export const DB_BUSY_TIMEOUT_MS = 1_000;

/**
 * SQLite's own busy handler sleeps with the event loop stopped (no timers, no heartbeats), so it
 * gets only this much of the wait per poll; between polls the process is free.
 */
export const DB_SYNC_BUSY_TIMEOUT_MS = 10;

/** Pause between polls for a held write lock (jittered ±50 % so waiting processes drift apart). */
export const DB_LOCK_POLL_MS = 10;

/**
 * What a committed write survives. "process": a crash or kill -9 of any process (SQLite
 * `synchronous = NORMAL` in WAL: the last commits can be lost on power loss or an OS crash).
 * "power": also power loss (`synchronous = FULL`: every commit waits for an fsync of the WAL).
 */
export const DURABILITY_MODES = ["process", "power"] as const;
export type Durability = (typeof DURABILITY_MODES)[number];
export const DEFAULT_DURABILITY: Durability = "process";
/** The `PRAGMA synchronous` level of each mode (SQLite reports NORMAL as 1, FULL as 2). */
export const SYNCHRONOUS_LEVEL = { process: "NORMAL", power: "FULL" } as const satisfies Record<Durability, string>;

/** A `running` run whose heartbeat is older than this is stale and may be claimed. */
export const STALE_RUN_THRESHOLD_MS = 30_000;

/** How often a running engine stamps `_smithers_runs.heartbeat_at_ms` unless told otherwise. */
export const DEFAULT_HEARTBEAT_MS = 5_000;

/**
 * Beats a run's owner must have missed before a worker takes the run over, whatever its lease: a
 * worker with a short lease never takes a live run whose owner beats slowly (`smithers up`).
 */
export const MISSED_BEATS_BEFORE_STALE = 4;

/** Default page size of signal queries. */
export const SIGNAL_QUERY_LIMIT = 200;

export const DB_RETRY_METRIC = "smithers.db.retries";

/**
 * Lifecycle of a human request; only `pending` rows can be answered, cancelled or expired.
 * `withdrawn`: the engine stopped waiting for it (the node's failure scope failed, or its waiting
 * run was cancelled); unlike a person's `cancelled`, it is asked again if the node waits again.
 */
export const HUMAN_REQUEST_STATUSES = ["pending", "answered", "cancelled", "expired", "withdrawn"] as const;

/**
 * Lifecycle of an approval gate; only `requested` rows can be decided. `withdrawn`: the engine
 * stopped waiting for it undecided (the node's failure scope failed, or its waiting run was
 * cancelled); a later request of the same node reopens it.
 */
export const APPROVAL_STATUSES = ["requested", "approved", "denied", "withdrawn"] as const;
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];

/**
 * A tool call is recorded as `started` (the intent) before it runs, then finished once as
 * `succeeded` or `failed`. `replayed`: a side-effect call that did not run because an earlier
 * attempt's call with the same idempotency key and input succeeded; its row carries that output.
 * `reverted`: a call whose effect the tool's `revert` undid before `smithers rewind` discarded
 * it; it is no longer a result a later call replays.
 */
export const TOOL_CALL_STATUSES = ["started", "succeeded", "failed", "replayed", "reverted"] as const;
export type ToolCallStatus = (typeof TOOL_CALL_STATUSES)[number];

/** Events persisted per BEGIN IMMEDIATE when the event bus drains its queue. */
export const EVENT_BATCH_MAX = 500;

/**
 * A WAL at least this large is checkpointed and truncated when a run ends. A new database's
 * schema alone is a few hundred KB of WAL: below this, the fsync of a truncating checkpoint
 * would cost a short run more than the run itself (SQLite folds a small WAL in on its own).
 */
export const WAL_CHECKPOINT_MIN_BYTES = 1024 * 1024;

export { WAITING_STATUSES } from "../contract/index.ts";
