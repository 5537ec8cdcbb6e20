/**
 * The SQLite write-retry policy, expressed once as an Effect schedule and applied to single
 * writes and whole transactions alike. Effect is loaded on the first retry only: nearly every
 * process never needs it, and loading it costs more start-up time than a whole run.
 */
import type * as EffectModule from "effect";
import { SmithersError } from "../errors/index.ts";
import { DB_LOCK_POLL_MS, DB_RETRY_METRIC, DB_RETRY_POLICY, type DbRetryPolicy } from "./constants.ts";

type Fx = typeof EffectModule;
let fx: Fx | undefined;
type RetryCounter = EffectModule.Metric.Counter<number>;
let retryCounter: RetryCounter | undefined;

async function loadEffect(): Promise<Fx> {
  fx ??= await import("effect");
  retryCounter ??= fx.Metric.counter(DB_RETRY_METRIC, {
    description: "Database operations retried (SQLITE_BUSY / IOERR, PostgreSQL serialization failures, deadlocks, lost connections)",
    incremental: true,
  });
  return fx;
}

/** The `smithers.db.retries` counter (an Effect Metric), created with the first retry. */
export async function dbRetries(): Promise<RetryCounter> {
  await loadEffect();
  return retryCounter!;
}

/** Current value of `smithers.db.retries` in this process (0 before any retry). */
export function dbRetryCount(): number {
  if (!fx || !retryCounter) return 0;
  return fx.Effect.runSync(fx.Metric.value(retryCounter)).count;
}

const RETRYABLE = /SQLITE_BUSY|SQLITE_IOERR|database is locked|disk i\/o error/i;

export function isRetryableSqliteError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_IOERR"))) return true;
  return RETRYABLE.test(error.message);
}

const BUSY = /SQLITE_BUSY|database is locked/i;

/** Another connection holds the lock (as opposed to an I/O error). */
export function isBusySqliteError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && code.startsWith("SQLITE_BUSY")) return true;
  return BUSY.test(error.message);
}

/**
 * Tries `operation` again every ~DB_LOCK_POLL_MS while another connection holds the lock, until
 * `lockWaitMs` after `startedAt`. This is the busy timeout done asynchronously: SQLite's own busy
 * handler sleeps with the event loop stopped, so the connection gives it only a few ms per poll.
 */
async function waitOutLock<T>(operation: () => Promise<T>, lockWaitMs: number, first?: { startedAt: number; error: unknown }): Promise<T> {
  const deadline = (first?.startedAt ?? performance.now()) + lockWaitMs;
  let last: unknown;
  if (first) last = first.error;
  else {
    try {
      return await operation();
    } catch (error) {
      last = error;
    }
  }
  while (isBusySqliteError(last) && performance.now() < deadline) {
    await Bun.sleep(Math.max(1, Math.min(deadline - performance.now(), DB_LOCK_POLL_MS * (0.5 + Math.random()))));
    try {
      return await operation();
    } catch (error) {
      last = error;
    }
  }
  throw last;
}

/** Delay before retry number `n` (0-based): exponential from the base, capped, jittered within the cap. */
export function retryDelayMs(n: number, policy: DbRetryPolicy, random: () => number = Math.random): number {
  const computed = Math.min(policy.baseDelayMs * 2 ** n, policy.maxDelayMs);
  const factor = 1 + policy.jitter * (2 * random() - 1);
  return Math.min(Math.max(0, Math.round(computed * factor)), policy.maxDelayMs);
}

/** Delays between the retries after the first one (the first retry's wait is slept before them). */
function retrySchedule({ Schedule, Duration, Effect }: Fx, policy: DbRetryPolicy) {
  return Schedule.exponential(Duration.millis(policy.baseDelayMs), 2).pipe(
    Schedule.modifyDelay(({ attempt }) => Effect.succeed(Duration.millis(retryDelayMs(attempt, policy)))),
  );
}

/**
 * Runs `operation`, retrying retryable SQLite failures per `policy`; when retries run out the
 * failure becomes a `DB_WRITE_FAILED` SmithersError. Other errors pass through untouched. Each
 * try first waits up to `lockWaitMs` (asynchronously) for a lock another connection holds.
 */
export async function withSqliteWriteRetry<T>(
  label: string,
  operation: () => Promise<T>,
  policy: DbRetryPolicy = DB_RETRY_POLICY,
  lockWaitMs = 0,
  isRetryable: (error: unknown) => boolean = isRetryableSqliteError,
): Promise<T> {
  // The first try runs outside Effect: nearly every write succeeds at once, and this path is hot.
  const startedAt = performance.now();
  try {
    return await operation();
  } catch (error) {
    let last = error;
    if (lockWaitMs > 0 && isBusySqliteError(error)) {
      try {
        return await waitOutLock(operation, lockWaitMs, { startedAt, error });
      } catch (waited) {
        last = waited;
      }
    }
    if (!isRetryable(last) || policy.retries <= 0) throw giveUp(label, last, policy, isRetryable);
  }
  const tryOnce = lockWaitMs > 0 ? () => waitOutLock(operation, lockWaitMs) : operation;
  const effect = await loadEffect();
  const { Duration, Effect, Metric } = effect;
  const firstWait = Effect.sleep(Duration.millis(retryDelayMs(0, policy)));
  const retries = Effect.retry(Effect.andThen(Metric.update(retryCounter!, 1), Effect.tryPromise({ try: tryOnce, catch: (e) => e })), {
    schedule: retrySchedule(effect, policy),
    times: policy.retries - 1,
    while: isRetryable,
  });
  return Effect.runPromise(Effect.andThen(firstWait, retries).pipe(Effect.mapError((error: unknown) => giveUp(label, error, policy, isRetryable))));
}

function giveUp(label: string, error: unknown, policy: DbRetryPolicy, isRetryable: (error: unknown) => boolean): unknown {
  return isRetryable(error)
    ? new SmithersError("DB_WRITE_FAILED", `${label}: the database stayed busy after ${policy.retries} retries`, {
        cause: error,
        label,
        retries: policy.retries,
      })
    : error;
}
