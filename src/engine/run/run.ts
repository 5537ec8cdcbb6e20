/**
 * One executing run: render -> decide -> commit the step -> start the work, until nothing is
 * left. A step is one transaction: the outcomes of attempts whose work ended (output rows,
 * attempt and node states), the attempts the scheduler starts next (node running + attempt row),
 * skips, the step's events and its frame. Work starts only after that commit (write before do),
 * and a task's output is committed before any task that depends on it starts. Memory mirrors
 * what the step writes; a crash loses at most the step in flight, which resume repairs. The
 * step that finds the run over commits with the run's final status.
 *
 * The parts: run-state.ts (what the run holds), run-step.ts (one step), run-actions.ts (a
 * scheduler action applied), run-attempts.ts (launching and settling attempts), run-render.ts,
 * pure-batch.ts (steps committed together), agent-output.ts, run-end.ts (the last transaction).
 */
import type { SmithersDb } from "../../db/index.ts";
import { SmithersError } from "../../errors/index.ts";
import type { PlanTask } from "../../jsx/index.ts";
import type { EventBus } from "./event-bus.ts";
import type { EventBody } from "../core/index.ts";
import type { FrameRecorder } from "../history/index.ts";
import type { RunSetup } from "./run-setup.ts";
import { WAIT_POLL_MS, YIELD_EVERY_MS } from "../core/index.ts";
import type { SmithersWorkflow } from "../workflow/index.ts";
import { asRunError, endRun, runOutput } from "./run-end.ts";
import { renderPlan } from "./run-render.ts";
import { RunState, type RunResult, type RunSettings } from "./run-state.ts";
import { runStep } from "./run-step.ts";

export { asRunError } from "./run-end.ts";
export type { RunResult, RunSettings } from "./run-state.ts";

export class Run {
  private readonly state: RunState;
  /** A resumed run's first look for pending scores a dead process left (started after its first step). */
  private recovering: Promise<void> | undefined;

  constructor(wf: SmithersWorkflow, setup: RunSetup, db: SmithersDb, bus: EventBus, frames: FrameRecorder, settings: RunSettings, now: () => number) {
    this.state = new RunState(wf, setup, db, bus, frames, settings, now);
  }

  /** Stages an event: stored with the run's next transaction, heard by listeners once committed. */
  emit(event: EventBody): void {
    this.state.emit(event);
  }

  /** Another process claimed the run (its heartbeat CAS failed): stop without touching the run row. */
  lostOwnership(): void {
    const run = this.state;
    run.lost = true;
    run.fail(new SmithersError("RUN_OWNED", `Run "${run.setup.runId}" was taken over by another process`, { runId: run.setup.runId }));
    run.wakeUp();
  }

  cancel(): void {
    this.state.abort.abort();
    this.state.stop.abort();
    this.state.wakeUp();
  }

  /** The tasks a render gives now; nothing is written (what a resume under changed code compares, see code-check.ts). */
  async plannedTasks(): Promise<readonly PlanTask[]> {
    return (await renderPlan(this.state)).tasks;
  }

  /** The result of a run that had already finished, read back without running or writing anything. */
  async readBack(): Promise<RunResult> {
    await renderPlan(this.state);
    await this.scoreLeftovers();
    return { runId: this.state.setup.runId, status: "finished", output: runOutput(this.state), ...this.state.usageResult() };
  }

  async execute(): Promise<RunResult> {
    const run = this.state;
    try {
      let yieldedAtMs = performance.now();
      while (!run.abort.signal.aborted && !run.failure) {
        const next = await runStep(run); // the first one also names the run (see nameRun in run-step.ts)
        if (!this.recovering && run.setup.resumed) this.recovering = run.recoverScores().catch(() => undefined); // a dead process's pending scores, beside the run
        if (next === "done") break;
        if (run.gcDue()) Bun.gc(true); // see GC_AFTER_TASKS
        // Wait for work to end (or a backoff to pass) unless an ended attempt is already waiting,
        // or the run was cancelled or failed during the step (its wake-up came before this sleep).
        if (next !== "again" && run.ended.length === 0 && !run.abort.signal.aborted && !run.failure) await run.sleep(pollWhileWaiting(run, next.untilMs));
        if (performance.now() - yieldedAtMs >= YIELD_EVERY_MS) {
          // Steps of in-memory work and synchronous SQLite resolve as microtasks, and so does a
          // sleep that work ending in a microtask wakes: the process's timers and I/O (the
          // heartbeat, a Ctrl-C, a server in the same process) get a turn at least this often
          // however long a chain of such steps is. The loop's check for a cancel or failure that
          // came meanwhile follows.
          await new Promise((resolve) => setImmediate(resolve));
          yieldedAtMs = performance.now();
        }
      }
    } catch (error) {
      if (SmithersError.is(error, "RUN_OWNED")) run.lost = true;
      run.fail(asRunError(error));
    }
    while (run.working.size > 0) await Promise.all(run.working);
    const result = await endRun(run);
    // The run's status and end are stored; its scorers finish (each bounded by its timeout) before the process moves on.
    if (!run.lost) await this.scoreLeftovers();
    return result;
  }

  /** Scores rows a dead process left pending, then waits for every scorer of this execution. A scorer never fails the run. */
  private async scoreLeftovers(): Promise<void> {
    const run = this.state;
    // Only a resumed run can have rows a dead process left; a new run's own scorers are all in this process.
    if (run.setup.resumed) {
      await this.recovering;
      // Unreadable now: the rows stay pending for a later process.
      await run.recoverScores().catch(() => undefined);
    }
    await run.scoring.drain(run.setup.runId);
  }
}

/**
 * While a node waits for a decision, an answer, a signal or a child run and other work runs on
 * (async), the run looks for the answer at least every WAIT_POLL_MS: senders only mark runs
 * that are suspended, so a running one must look itself.
 */
function pollWhileWaiting(run: RunState, untilMs: number | undefined): number | undefined {
  if (run.waits.waiting.size === 0 && !run.limits.waitingForSlot) return untilMs;
  return Math.min(untilMs ?? Infinity, run.now() + WAIT_POLL_MS);
}
