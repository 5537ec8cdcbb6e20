/**
 * The engine's shared vocabulary, imported by every other room and importing none: node and run
 * states, the event union, the tunable constants, usage and budgets, the bounded cache, owner ids.
 * Other rooms and src/engine/index.ts enter this room only through this file.
 */
export { type Clock, type ClockTimer, SYSTEM_CLOCK } from "./clock.ts";
export { BoundedCache, type CacheLimits, type CacheStats, estimateBytes } from "./bounded-cache.ts";
export {
  addToTotals,
  type Budget,
  budgetStop,
  carriedUsage,
  checkBudget,
  NO_USAGE,
  remainingBudget,
  storedBudget,
  usageSince,
  withBudget,
  withCarriedUsage,
} from "./budget.ts";
export {
  CRON_FIRE_BATCH,
  CRON_SKIP_COUNT_LIMIT,
  DEFAULT_RETENTION_MS,
  DEFAULT_DB_PATH,
  DEFAULT_RETRY_FACTOR,
  DEFAULT_RETRY_POLICY,
  DEFAULT_STOP_GRACE_MS,
  DEFAULT_TASK_RETRIES,
  FRAME_DELTA_MIN_WEIGHT,
  FRAME_KEYFRAME_INTERVAL,
  FRAME_LRU_BYTES,
  FRAME_LRU_SIZE,
  HEARTBEAT_INTERVAL_MS,
  MAX_FAILED_ATTEMPTS_SHOWN,
  MAX_RETRY_DELAY_MS,
  MAX_TIMER_MS,
  OUTPUT_FLUSH_MS,
  OUTPUT_TEXT_MAX,
  PURE_BATCH_MAX_MS,
  PURE_BATCH_MAX_STEPS,
  ROW_CACHE_BYTES,
  ROW_CACHE_SIZE,
  TIMER_WAIT_IN_PLACE_MS,
  RATE_LIMITED_WAIT_MS,
  RESUME_EVENTS,
  WAIT_POLL_MS,
  YIELD_EVERY_MS,
  GC_AFTER_TASKS,
  GC_EVERY,
} from "./constants.ts";
export {
  checkNewRunId,
  queueName,
  type EventBody,
  type EventOf,
  runEndedEvent,
  SERVER_RUN_ID,
  type SmithersEvent,
  smithersEventSchema,
  type SmithersEventType,
  smithersEventTypeSchema,
  type ToolCallReport,
} from "./events.ts";
export { ACTIVE_OWNERS, newOwnerId, ownerAlive, ownerProcessAlive } from "./owner.ts";
export {
  type AttemptState,
  attemptStateSchema,
  isOver,
  isWaiting,
  type NodeState,
  nodeStateSchema,
  type RunStatus,
  runStatusSchema,
  WAITING_STATUSES,
  type WaitingStatus,
} from "./states.ts";
export { checkLimits, LIMIT_OPTIONS, limitFor, type Limits, type LimitSpec, mergeLimits, parseLimitFlag, RATE_WINDOW_MS } from "./limits.ts";
