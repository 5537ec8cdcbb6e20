/**
 * Ending a run: once its loop stopped, the run's last transaction commits what is left (the
 * carried and batched writes, attempts stopped by a cancel or failure, the last frame) with the
 * run's final status; a last transaction that fails still ends the run, failed.
 */
import { attempts as attemptRows, nodes, runs, stripBookkeeping as strip, type Sql } from "../../db/index.ts";
import { describeThrown, errorJsonText, errorSummaryJson, SmithersError } from "../../errors/index.ts";
import { runEndedEvent } from "../core/index.ts";
import { createSuccessor } from "./continue-as-new.ts";
import { isWaiting, WAITING_STATUSES, type RunStatus } from "../core/index.ts";
import { settleEnded } from "./run-attempts.ts";
import type { RunResult, RunState } from "./run-state.ts";

/** A SQLite or PostgreSQL driver error, possibly wrapped (Drizzle's query error keeps it as `cause`). */
function isDatabaseError(error: unknown): boolean {
  for (let e = error, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const name = (e as { name?: unknown }).name;
    const code = (e as { code?: unknown }).code;
    if (name === "SQLiteError" || name === "PostgresError" || (typeof code === "string" && code.startsWith("SQLITE_"))) return true;
  }
  return false;
}

/**
 * What a run fails with when a step throws: a SmithersError as is, a database error as a failed
 * write, anything else as a fault of the engine itself (ENGINE_ERROR), never mistaken for storage.
 */
export function asRunError(error: unknown): SmithersError {
  if (SmithersError.is(error)) return error;
  if (isDatabaseError(error)) {
    return new SmithersError("DB_WRITE_FAILED", `The run could not record its progress: ${describeThrown(error)}`, { cause: error });
  }
  return new SmithersError("ENGINE_ERROR", `The engine failed: ${describeThrown(error)}`, { cause: error });
}

/** After the run's loop stopped and its work in flight ended: the run's last transaction, and its result. */
export async function endRun(run: RunState): Promise<RunResult> {
  const { runId } = run.setup;
  run.agentOutput.emitText();
  run.agentOutput.closed = true;
  if (run.lost) return { runId, status: "failed", error: run.failure }; // the new owner writes from here on
  // Attempts stopped by a failure or cancel settle with the run's last transaction, and the
  // states they settled into belong in the last frame.
  const writes = [...run.carried.splice(0), ...run.pureBatch.take(), ...settleEnded(run, run.ended.splice(0), true)];
  if (run.plan) {
    try {
      const frame = run.frames.next(run.plan, (key) => run.setup.states.get(key)?.state, run.now());
      if (frame) run.frameBox.push(frame);
    } catch (error) {
      run.fail(asRunError(error)); // the run still ends, failed, instead of staying `running`
    }
  }
  let status: RunStatus = run.abort.signal.aborted ? "cancelled" : run.failure ? "failed" : run.continueFrom ? "continued" : (run.suspended ?? "finished");
  let nextRunId: string | undefined;
  const error = status === "failed" && run.failure ? errorSummaryJson(run.failure) : undefined;
  const finishedAtMs = run.now();
  const planned = status;
  // A successor is made from the stored run row (its name with it), before the final status: then the name goes first, as written.
  run.nameWithStatus = planned !== "continued";
  try {
    await run.db.withTransaction("finishRun", async (q) => {
      await run.checkOwner(q);
      status = planned; // (a retried transaction decides again)
      // Asked to stop (smithers cancel) since its last heartbeat, and about to wait: it ends cancelled instead.
      const cancelledInstead = isWaiting(status) && (await runs.readRun(q, runId))?.cancelRequestedAtMs != null;
      if (cancelledInstead) status = "cancelled";
      for (const write of writes) await write(q);
      if (cancelledInstead) await nodes.resetNodes(q, runId, [...WAITING_STATUSES], "cancelled", finishedAtMs);
      // Nothing is in flight any more: an attempt still `running` here is one the engine lost
      // track of (a bug), closed so a finished run never holds a running attempt. A run whose
      // attempts were all stored as they ended (static tasks alone) has none to look for.
      if (run.storedRunning)
        await closeLeftRunning(run, q, finishedAtMs, () => new SmithersError("ENGINE_ERROR", "The attempt was still recorded running when its run ended"));
      // What a waiting node waits for may have arrived after this run last looked (an answer, a
      // slot that freed): then it is due at once.
      const slotFree = await run.limits.atEnd(q, status, run.plan);
      const wakeAtMs = isWaiting(status) && (slotFree || (await run.waits.arrivedMeanwhile(q, run.plan))) ? finishedAtMs : (run.suspendedUntilMs ?? null);
      if (status === "continued") {
        const next = await createSuccessor(q, successorArgs(run, finishedAtMs));
        nextRunId = next.nextRunId;
        run.emitInTransaction(next.event);
      }
      const name = run.nameWithStatus && run.renamed !== undefined ? { workflowName: run.renamed } : {};
      await runs.setRunFields(q, runId, { status, finishedAtMs, wakeAtMs, nextRunId, ...name, ...(error ? { errorJson: JSON.stringify(error) } : {}) });
      if (status !== "continued") run.emitInTransaction(runEndedEvent(status, error));
      await run.journal(q);
    });
  } catch (cause) {
    if (SmithersError.is(cause, "RUN_OWNED")) return { runId, status: "failed", error: cause };
    return endFailed(run, asRunError(cause), finishedAtMs);
  }
  await run.readCustomRows();
  run.agentOutput.cancelFlush();
  const usage = run.usageResult();
  if (status === "cancelled" || isWaiting(status)) return { runId, status, ...usage };
  if (status === "continued") return { runId, status, nextRunId, ...usage };
  if (status === "failed") return { runId, status, error: run.failure, ...usage };
  return { runId, status, output: runOutput(run), ...usage };
}

function successorArgs(run: RunState, nowMs: number): Parameters<typeof createSuccessor>[1] {
  const { setup } = run;
  return {
    registry: run.wf.registry,
    runId: setup.runId,
    ownerId: setup.ownerId,
    input: setup.storedInput,
    loops: setup.loops,
    from: run.continueFrom!,
    iteration: run.activeIteration(),
    nowMs,
    usage: run.usage,
  };
}

/**
 * The run's last transaction failed (a write that cannot be stored, a broken database): ends
 * the run `failed` without that step's writes, closing what was left running, so no attempt
 * stays `running` inside a finished run.
 */
async function endFailed(run: RunState, cause: SmithersError, finishedAtMs: number): Promise<RunResult> {
  const { runId } = run.setup;
  run.failure ??= cause;
  const failure = run.failure;
  const end = (withJournal: boolean) =>
    run.db.withTransaction("failRun", async (q) => {
      await run.checkOwner(q);
      await closeLeftRunning(run, q, finishedAtMs, cause);
      await runs.setRunFields(q, runId, { status: "failed", finishedAtMs, errorJson: JSON.stringify(errorSummaryJson(failure)) });
      run.emitInTransaction({ type: "RunFailed", status: "failed", error: errorSummaryJson(failure) });
      if (withJournal)
        await run.journal(q); // frames with the events that announce them
      else await run.bus.writeStagedIn(q);
    });
  try {
    await end(true);
  } catch (error) {
    if (SmithersError.is(error, "RUN_OWNED")) throw error;
    // The staged frames or events were what SQLite refused: the run still ends, without them.
    run.bus.dropStaged();
    await end(false);
  }
  return { runId, status: "failed", error: failure };
}

/** Inside a run-ending transaction: fails what is still recorded running, each with its NodeFailed. */
async function closeLeftRunning(run: RunState, q: Sql, nowMs: number, cause: SmithersError | (() => SmithersError)): Promise<void> {
  // Made (its stack captured, serialized) only when something is left running.
  let error: SmithersError | undefined = typeof cause === "function" ? undefined : cause;
  const made = () => (error ??= (cause as () => SmithersError)());
  const closed = await attemptRows.failRunningWork(q, run.setup.runId, nowMs, () => errorJsonText(made()));
  for (const a of closed) run.emitInTransaction({ type: "NodeFailed", ...a, error: errorSummaryJson(made()) });
}

/** The `output` schema's latest row when the workflow has one, else the last finished task's row. */
export function runOutput(run: RunState): unknown {
  const declared = run.wf.registry.byKey.get("output");
  if (declared) return strip(run.index.latestInTable(declared.key));
  const tasks = run.plan?.tasks ?? [];
  for (let i = tasks.length - 1; i >= 0; i--) {
    const task = tasks[i]!;
    if (run.setup.states.get(task.key)?.state !== "finished" || task.mode === "timer") continue;
    const info = run.wf.registry.resolve(task.output, task.outputSchema);
    return strip(run.index.row(info.key, task.nodeId, task.iteration));
  }
  return undefined;
}
