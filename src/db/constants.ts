/** Write-retry policy from the data-model spec: 6 retries, 50 ms doubling, 2 s cap, ±25 % jitter. */
export const DB_RETRY_POLICY = {
  retries: 6,
  baseDelayMs: 50,
  maxDelayMs: 2_000,
  jitter: 0.25,
} as const;

export type DbRetryPolicy = { retries: number; baseDelayMs: number; maxDelayMs: number; jitter: number };

/** How long SQLite's own busy handler waits before reporting SQLITE_BUSY to the retry policy. */
export const DB_BUSY_TIMEOUT_MS = 1_000;

/** A `running` run whose heartbeat is older than this is stale and may be claimed. */
export const STALE_RUN_THRESHOLD_MS = 30_000;

/** Default page size of signal queries. */
export const SIGNAL_QUERY_LIMIT = 200;

export const DB_RETRY_METRIC = "smithers.db.retries";

/** Lifecycle of a human request; only `pending` rows can be answered, cancelled or expired. */
export const HUMAN_REQUEST_STATUSES = ["pending", "answered", "cancelled", "expired"] as const;
export type HumanRequestStatus = (typeof HUMAN_REQUEST_STATUSES)[number];

/** Lifecycle of an approval gate; only `requested` rows can be decided. */
export const APPROVAL_STATUSES = ["requested", "approved", "denied"] as const;
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];

/** A tool call is recorded as `started` (the intent) before it runs, then finished once. */
export const TOOL_CALL_STATUSES = ["started", "succeeded", "failed"] as const;
export type ToolCallStatus = (typeof TOOL_CALL_STATUSES)[number];

/** Events persisted per BEGIN IMMEDIATE when the event bus drains its queue. */
export const EVENT_BATCH_MAX = 500;

/** A WAL at least this large is checkpointed and truncated when a run ends. */
export const WAL_CHECKPOINT_MIN_BYTES = 256 * 1024;
