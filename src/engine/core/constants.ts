/** How often a running engine stamps `_smithers_runs.heartbeat_at_ms` (RunOptions.heartbeatMs overrides it). */
export { DEFAULT_HEARTBEAT_MS as HEARTBEAT_INTERVAL_MS } from "../../db/index.ts";

/** The database a workflow and the command use when none is named (nor SMITHERS_DATABASE_URL). */
export const DEFAULT_DB_PATH = "smithers.db";

/** The events that say whether a run's latest resume went ahead or failed. */
export const RESUME_EVENTS = ["RunStarted", "RunResumed", "RunResumeFailed"] as const;

/**
 * How long a task body stopped from outside (timeout, cancel, the run failing) may take to
 * settle before its attempt is recorded `abandoned` and the run moves on without it.
 */
export const DEFAULT_STOP_GRACE_MS = 10_000;

/** The longest delay a timer takes (2^31 - 1 ms, about 24.8 days); a longer one would fire at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A run whose only remaining wait is a timer due within this many ms waits for it in its process;
 * a later one ends the run `waiting-timer` and the daemon resumes it when due.
 */
export const TIMER_WAIT_IN_PLACE_MS = 5_000;

/** How long a task whose agents are all rate-limited waits when none of them said for how long: a rate window's minute. */
export const RATE_LIMITED_WAIT_MS = 60_000;

/**
 * A running run with a node waiting for the world (an async approval, a signal, a child run)
 * looks for its answer at least this often while other work goes on.
 */
export const WAIT_POLL_MS = 500;

/**
 * Retries of a compute or agent task that gives no `retries`. Bounded (smithers-orchestrator
 * retries forever): a task that fails for good (a bug, a bad prompt, a revoked key) fails its run
 * within seconds and says why, instead of keeping the run `running` for ever. `retries={Infinity}`
 * asks for the unbounded kind.
 */
export const DEFAULT_TASK_RETRIES = 3;

/** The backoff of a task that gives no `retryPolicy`: 1 s, 2 s, 4 s … (the 3 default retries wait 7 s in all). */
export const DEFAULT_RETRY_POLICY = { backoff: "exponential", initialDelayMs: 1_000 } as const;

/** No wait between attempts is longer than this unless the policy's `maxDelayMs` says so: 5 min. */
export const MAX_RETRY_DELAY_MS = 5 * 60_000;

/** Growth of exponential backoff when the policy gives no `factor`. */
export const DEFAULT_RETRY_FACTOR = 2;

/** Keyframes fall on multiples of this frame number (the data-model spec's FRAME_KEYFRAME_INTERVAL). */
export const FRAME_KEYFRAME_INTERVAL = 50;

/**
 * What one delta weighs against a keyframe's bytes in the adaptive keyframe policy, at least: a
 * cold read replays a delta (apply, rehash, hash check) in about the time it decodes this many
 * bytes of keyframe XML, however few bytes the delta itself holds. Without the floor, compact
 * deltas would stretch the chains a read replays.
 */
export const FRAME_DELTA_MIN_WEIGHT = 128;

/** Reconstructed frames kept in memory by readFrame. */
export const FRAME_LRU_SIZE = 512;

/** Estimated bytes of reconstructed frames kept by readFrame (see estimateBytes), whatever their number. */
export const FRAME_LRU_BYTES = 64 * 2 ** 20;

/** Output rows a run keeps in memory for ctx beyond the index of which rows exist; others are read from SQLite. */
export const ROW_CACHE_SIZE = 1_024;

/** Estimated bytes of the output rows a run keeps in memory (see estimateBytes). */
export const ROW_CACHE_BYTES = 16 * 2 ** 20;

/** Due cron schedules one daemon pass fires at most; the rest are due on the next pass. */
export const CRON_FIRE_BATCH = 100;

/** Missed cron slots counted one by one after downtime; past this the count stops (a `* * * * * *` pattern down for a week). */
export const CRON_SKIP_COUNT_LIMIT = 10_000;

/** Agent output (NodeOutput events) reaches the database and listeners within about this long, batched. */
export const OUTPUT_FLUSH_MS = 200;

/** The longest text one NodeOutput event holds; a longer piece is cut with "…". */
export const OUTPUT_TEXT_MAX = 8_000;

/** `smithers prune` without --older-than: runs that ended more than this long ago (7 days). */
export const DEFAULT_RETENTION_MS = 7 * 24 * 60 * 60_000;

/**
 * Steps that start only pure attempts (static values: nothing outside the engine acts) commit
 * together, at least every this many steps or this many ms, so a long chain of them pays one
 * commit per group instead of one per step. A crash loses at most the group in flight, which
 * the resume runs again with the same result.
 */
export const PURE_BATCH_MAX_STEPS = 128;
export const PURE_BATCH_MAX_MS = 20;

/** A running engine gives the event loop a turn at least this often (its steps may all resolve as microtasks). */
export const YIELD_EVERY_MS = 20;

/**
 * A large run (its plan, its stored nodes or the attempts it settled reach GC_AFTER_TASKS) collects
 * its garbage itself, synchronously (`Bun.gc(true)`): on a resume, once its setup read the run back
 * and its frame chain was rebuilt (the rows and trees they were read from are garbage by then);
 * once after its first render (the element tree, before the frame is built beside the plan); then
 * after every GC_EVERY attempts it settled or GC_EVERY steps it took, whichever comes first. A long
 * chain of steps resolving as microtasks gives the runtime's own collector little chance: what a
 * batch in flight held when an eden collection came is promoted and dies soon after, and the old
 * garbage grew with the run; `Bun.gc(false)` (an asynchronous request) left the heap growing. Peak
 * RSS of the 10,000-task runs (bench/compare --workflows scale, 2-core machine, medians of 3,
 * alternating): seq ~120 -> ~109 MB, par ~125 -> ~109 MB, resume ~113-123 -> ~110 MB. A collection
 * takes ~10-20 ms there: seq-10000 and par-10000 pay ~11 of them, 5-45% of their wall time (every
 * 700 steps gave seq ~104 MB for ~12% more). A run smaller than GC_AFTER_TASKS (the 1,000-task
 * shapes) never pays one.
 */
export const GC_AFTER_TASKS = 2_000;
export const GC_EVERY = 1_000;

/** `inspect` and the run page list each task's last this many failed attempts (a retried task may fail many times). */
export const MAX_FAILED_ATTEMPTS_SHOWN = 5;
