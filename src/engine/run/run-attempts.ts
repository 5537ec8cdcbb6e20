/**
 * A run's attempts after their start committed: their work launched, stopped ones given a grace
 * period, and ended ones settled into node states, retry timers and the writes that record them.
 */
import { describeThrown, errorSummaryJson, SmithersError } from "../../errors/index.ts";
import { performAttempt, recordSettle, settleOutcome, type AttemptResult } from "../attempt/index.ts";
import type { EventBody } from "../core/index.ts";
import { DEFAULT_STOP_GRACE_MS, MAX_TIMER_MS, RATE_LIMITED_WAIT_MS } from "../core/index.ts";
import { retryBudget, retryDelay } from "../schedule/index.ts";
import type { Ended, RunState, Started, Write } from "./run-state.ts";

/**
 * Starts the work of an attempt whose start row has committed. An attempt stopped from outside
 * ends only once its body settled, or after the grace period (then `abandoned`: the body may
 * still be running), so a retry never runs beside the body it replaces.
 */
export function launchAttempt(run: RunState, started: Started): void {
  const { result, bodySettled } = performAttempt(started.input);
  const work: Promise<void> = result
    .then(async (ended) => {
      const final = !ended.ok && ended.stopped ? await afterStop(run, ended, bodySettled) : ended;
      run.ended.push({ ...started, result: final });
    })
    .catch((thrown: unknown) => {
      // performAttempt never rejects; if that promise ever breaks, the attempt still ends
      // (failed, ENGINE_ERROR) instead of leaving the run asleep with it `running`.
      const error = new SmithersError("ENGINE_ERROR", `The engine lost the outcome of task "${started.task.nodeId}": ${describeThrown(thrown)}`, {
        nodeId: started.task.nodeId,
      });
      run.ended.push({ ...started, result: { ok: false, thrown, error, finishedAtMs: run.now() } });
    })
    .finally(() => {
      // Out of `working` before the run wakes: a step that finds nothing else to do must not
      // wait for work that already ended (it would sleep with nothing left to wake it).
      run.working.delete(work);
      run.wakeUp();
    });
  run.working.add(work);
}

async function afterStop(run: RunState, ended: Extract<AttemptResult, { ok: false }>, bodySettled: Promise<void>): Promise<AttemptResult> {
  const graceMs = run.settings.graceMs ?? DEFAULT_STOP_GRACE_MS;
  const hurry = run.settings.abandonSignal;
  let timer: unknown;
  let onHurry: (() => void) | undefined;
  const graceOver = new Promise<boolean>((resolve) => {
    if (Number.isFinite(graceMs)) timer = run.clock.setTimeout(() => resolve(false), Math.min(graceMs, MAX_TIMER_MS)); // Infinity: wait for the body
    onHurry = () => resolve(false);
    if (hurry?.aborted) onHurry();
    hurry?.addEventListener("abort", onHurry, { once: true });
  });
  const inTime = await Promise.race([bodySettled.then(() => true), graceOver]);
  if (timer !== undefined) run.clock.clearTimeout(timer);
  if (onHurry) hurry?.removeEventListener("abort", onHurry);
  if (inTime) return { ...ended, finishedAtMs: run.now() };
  const { error } = ended;
  const message = `${error.message}; its body did not stop within ${graceMs} ms of the stop and may still be running`;
  return {
    ...ended,
    error: new SmithersError(error.code, message, { ...error.details, graceMs, bodyMayBeRunning: true }),
    finishedAtMs: run.now(),
    abandoned: true,
  };
}

/**
 * Settles ended attempts in memory (states, snapshot, retry timers) and returns the writes
 * that record them, with their events, for the step's transaction.
 */
export function settleEnded(run: RunState, ended: Ended[], runEnding = false): Write[] {
  const writes: Write[] = [];
  for (const e of ended) {
    const { task, tracked: t } = e;
    const ids = { nodeId: task.nodeId, iteration: task.iteration, attempt: e.input.attempt };
    // Attempts that end with the run (stopped by its cancel or failure) are not retried.
    const outcome = settleOutcome(e.input, e.result, !runEnding && t.failures < retryBudget(task));
    run.account(e.result);
    run.frames.markDirty(task.key);
    const events: EventBody[] = [];
    if (e.result.ok === false && e.result.abandoned) {
      events.push({ type: "NodeAbandoned", ...ids, reason: "body-unsettled", error: errorSummaryJson(e.result.error) });
    }
    if (outcome.kind === "finished") {
      const finished: EventBody = { type: "NodeFinished", nodeId: ids.nodeId, iteration: ids.iteration, attempt: ids.attempt, durationMs: outcome.durationMs };
      if (e.result.ok && e.result.cache?.hit === true) finished.cached = true;
      events.push(finished);
      run.remember(e.input.info, outcome.row);
      if (e.input.info.custom) run.customRows.push(e); // its own defaults are read back once stored
      if (task.scorers && e.result.ok) {
        const { info, runId, attempt, startedAtMs, input } = e.input;
        run.scoring.stage({ task, info, runId, attempt, startedAtMs, finishedAtMs: e.result.finishedAtMs, output: e.result.data }, input);
      }
      t.state = "finished";
      run.finishedIds.add(task.nodeId);
    } else if (outcome.kind === "cancelled") {
      events.push({ type: "NodeCancelled", ...ids, durationMs: outcome.durationMs });
      t.state = "cancelled";
    } else if (outcome.kind === "suspended") {
      // The child run waits: so does the node, until the child is due (see resolveWaits).
      events.push({ type: "SubflowWaiting", ...ids, childRunId: outcome.childRunId, childStatus: outcome.status });
      t.state = outcome.status;
      t.wakeAtMs = outcome.wakeAtMs;
      run.waits.waiting.add(task.key);
    } else if (outcome.rateLimited) {
      // Every agent of its list is rate-limited: the node waits for the soonest window (stored, so a
      // resume or the daemon keeps it), and no retry is spent on a limit that is not the task's fault.
      events.push({ type: "NodeFailed", ...ids, durationMs: outcome.durationMs, error: errorSummaryJson(outcome.error) });
      t.state = "waiting-rate";
      t.wakeAtMs = outcome.waitUntilMs = run.now() + (outcome.retryAfterMs ?? RATE_LIMITED_WAIT_MS);
    } else {
      events.push({ type: "NodeFailed", ...ids, durationMs: outcome.durationMs, error: errorSummaryJson(outcome.error) });
      t.failures++;
      t.state = outcome.retryable ? "pending" : "failed";
      run.noteError(task.key, outcome.error);
      if (outcome.retryable) {
        // Stored on the node (wake_at_ms) too, so a resume after a crash keeps the backoff.
        const delayMs = retryDelay(task.retryPolicy, t.failures, outcome.retryAfterMs);
        t.retryAtMs = outcome.retryAtMs = run.now() + delayMs;
        events.push({ type: "NodeRetrying", ...ids, attempt: ids.attempt + 1, delayMs, retryAtMs: t.retryAtMs });
      }
    }
    writes.push(async (q) => {
      await recordSettle(q, e.input, e.result, outcome);
      for (const event of events) run.emitInTransaction(event);
    });
    if (task.concurrencyKey !== undefined) {
      const failed = outcome.kind === "failed" ? outcome : undefined;
      run.limits.settle(task, { attempt: ids.attempt, usage: e.result.usage, errorCode: failed?.error.code, retryAfterMs: failed?.retryAfterMs }, run.now());
    }
  }
  return writes;
}
