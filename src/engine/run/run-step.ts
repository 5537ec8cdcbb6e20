/**
 * One step of a run, one transaction: settles ended attempts, renders and decides in memory,
 * then commits the outcomes, the new attempts' start rows, skips, loop moves, events and the
 * frame together; only then does the new attempts' work start. Writes are replayable (a busy
 * retry runs them again); memory is never changed inside the transaction.
 */
import { isPureAttempt, performPureAttempt, recordStart } from "../attempt/index.ts";
import { runs } from "../../db/index.ts";
import { decide } from "../schedule/index.ts";
import { applyAction, type StepWork } from "./run-actions.ts";
import { launchAttempt, settleEnded } from "./run-attempts.ts";
import { renderPlan } from "./run-render.ts";
import type { Ended, RunState, Started, StepNext, Write } from "./run-state.ts";

export async function runStep(run: RunState): Promise<StepNext> {
  run.agentOutput.stepInProgress = true;
  try {
    return await stepInner(run);
  } finally {
    run.agentOutput.stepInProgress = false;
  }
}

async function stepInner(run: RunState): Promise<StepNext> {
  run.budgetHeld = undefined; // decided again each step: the held task may be gone from the plan
  run.agentOutput.emitText(); // agent text so far goes with this step's commit, before the outcomes it settles
  const ended = run.ended.splice(0);
  run.settled += ended.length;
  const settlesWork = ended.some(ranOutsideMemory); // see canDefer
  const writes = settleEnded(run, ended);
  const starts: Started[] = [];
  let batched: Write[] = [];
  let next: StepNext = "again";
  try {
    const nowMs = run.now();
    if (run.readsStates) run.renderStale = true;
    // Answers first, then the render that may depend on them (a <Signal>'s children, a ctx read).
    if (run.waits.waiting.size > 0) {
      await run.waits.resolveWaits(await renderPlan(run), nowMs, writes);
      if (run.readsStates) run.renderStale = true;
    }
    const rendered = renderPlan(run);
    const plan = rendered instanceof Promise ? await rendered : rendered;
    nameRun(run, plan.workflowName, writes);
    const decided = decide(plan, run.setup.states, nowMs, run.settings.maxConcurrency ?? Infinity, run.decideMemo, run.finishedIds, run.limits.view(nowMs));
    const actions = run.limits.used ? await run.limits.admit(decided, nowMs) : decided;
    const work: StepWork = { starts, writes, finishedIterations: [] };
    for (const action of actions) next = applyAction(run, action, nowMs, work) ?? next;
    if (run.limits.used) run.limits.keepClaims(new Set(starts.map((st) => st.task)), nowMs);
    // An agent attempt held back by the budget and nothing else running, starting or due later
    // (a retry's backoff, a timer): the run ends here. While other work runs it waits for it.
    if (run.budgetHeld && starts.length === 0) {
      const dueMs = run.nextDueMs(nowMs);
      if (run.working.size > 0 || dueMs !== undefined) next = { untilMs: dueMs };
      else if (next !== "done") {
        run.fail(run.budgetHeld);
        next = "done";
      }
    }
    for (const st of starts) {
      st.tracked.state = "running";
      st.tracked.lastAttempt = st.input.attempt;
      st.tracked.retryAtMs = undefined;
      st.tracked.wakeAtMs = undefined;
      st.tracked.error = undefined;
      run.frames.markDirty(st.task.key);
    }
    const frame = run.frames.next(plan, run.stateOfKey, nowMs);
    if (frame) {
      run.frameBox.push(frame);
      // Announced first among the step's events (the frame rows themselves go with the journal).
      writes.unshift(() => void run.emitInTransaction({ type: "FrameCommitted", frameNo: frame.frameNo, encoding: frame.encoding }));
    }
    // Only once the frame shows how the iteration ended.
    for (const [loopId, iteration] of work.finishedIterations) run.forgetIteration(loopId, iteration);
    // The run ends here: its last outcomes commit with the run's final status, in one transaction.
    if (next === "done" && starts.length === 0) {
      run.carried.push(...run.pureBatch.take(), ...writes.splice(0));
      return next;
    }
    const startWrite: Write = async (q) => {
      for (const st of starts) {
        if (!st.input.startInSettle) await recordStart(q, st.input);
        run.emitInTransaction({ type: "NodeStarted", nodeId: st.task.nodeId, iteration: st.task.iteration, attempt: st.input.attempt });
      }
    };
    if (canDefer(run, starts, next, settlesWork)) {
      run.pureBatch.add([...writes.splice(0), startWrite]);
      for (const st of starts) {
        // Its settle joins this batch (the next step settles it, and commits with it or batches it too).
        st.input.startInSettle = true;
        run.ended.push({ ...st, result: performPureAttempt(st.input) });
      }
      return "again";
    }
    batched = run.pureBatch.take();
    if (starts.some(storesRunning)) run.storedRunning = true; // kept if the transaction rolls back: the end then looks
    if (batched.length > 0 || writes.length > 0 || starts.length > 0 || run.frameBox.size > 0 || run.bus.stagedCount > 0) {
      await run.db.withTransaction("step", async (q) => {
        await run.checkOwner(q);
        for (const write of batched) await write(q);
        for (const write of writes) await write(q);
        await startWrite(q);
        await run.journal(q);
      });
    }
  } catch (error) {
    // Nothing of this step was stored (a render, a frame or the transaction failed): its
    // outcomes (and those of the steps batched before it) go with the run's last transaction,
    // and the attempts it would have started never started.
    run.carried.push(...batched, ...run.pureBatch.take(), ...writes);
    for (const st of starts) {
      st.tracked.state = "pending";
      st.tracked.lastAttempt = st.input.attempt - 1;
      run.frames.markDirty(st.task.key);
    }
    throw error;
  }
  // Committed: the attempts it started run now, whatever happens next; so do the scorers of those it settled.
  for (const st of starts) launchAttempt(run, st);
  if (run.scoring.hasStaged) run.scoring.launchStaged();
  await run.readCustomRows();
  return next;
}

/**
 * The first render names the run: the `<Workflow name>` goes on the run row with this step's
 * writes (its transaction, or the batch it joins), not in a commit of its own; when those writes
 * are carried to the run's last transaction, its final status update stores the name (see endRun).
 * Compared with the stored name, not this process's: a run whose creator died before its first
 * step committed still has the default, and the process that resumes it names it.
 */
function nameRun(run: RunState, name: string, writes: Write[]): void {
  if (run.named) return;
  run.named = true;
  if (name !== run.setup.storedName) {
    run.renamed = name;
    writes.push(async (q) => {
      if (!run.nameWithStatus) await runs.setRunFields(q, run.setup.runId, { workflowName: name });
    });
  }
  run.wf.name = name; // later runs of this workflow are created with it
}

/**
 * Whether this step's writes can wait for a later step's commit: the run steps again at once
 * (it starts only pure attempts, done in memory now, or it moved a loop on), and the group of
 * such steps is still small and young. A step that starts other work, sleeps or ends commits;
 * so does one that settles an attempt which ran outside memory (`settlesWork`: it acted on the
 * world, and a crash must not make the resume run it again), and one after which a node waits
 * for the world, since each step then reads the database for its answer (which signal is still
 * free, what was decided) and must see every write before it.
 */
function canDefer(run: RunState, starts: readonly Started[], next: StepNext, settlesWork: boolean): boolean {
  // Staged scorers start once their pending rows committed: a step that settled a scored attempt commits.
  if (
    settlesWork ||
    run.scoring.hasStaged ||
    next === "done" ||
    (starts.length === 0 && next !== "again") ||
    run.waits.waiting.size > 0 ||
    run.abort.signal.aborted ||
    run.failure
  )
    return false;
  if (run.pureBatch.isFull()) return false;
  return starts.every(startsInMemory);
}

const ranOutsideMemory = (e: Ended): boolean => !isPureAttempt(e.input);
const startsInMemory = (st: Started): boolean => isPureAttempt(st.input) && st.task.concurrencyKey === undefined;
/** Its start writes its attempt row as `running` (one left to its settle writes it once, ended). */
const storesRunning = (st: Started): boolean => !st.input.startInSettle;
