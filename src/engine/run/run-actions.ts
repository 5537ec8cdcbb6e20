/**
 * How one scheduler action (see decide) becomes changes to the run's memory, writes for the
 * step's transaction, attempts to start once it commits, and what the run loop does next.
 */
import { nodes, ralph } from "../../db/index.ts";
import type { AgentEvent, AgentFallback } from "../../agents/index.ts";
import { budgetStop } from "../core/index.ts";
import { errorSummaryJson, SmithersError } from "../../errors/index.ts";
import type { PlanTask } from "../../jsx/index.ts";
import type { AttemptInput } from "../attempt/index.ts";
import type { TrackedNode } from "./run-setup.ts";
import type { Action } from "../schedule/index.ts";
import { failureError } from "../schedule/index.ts";
import { TIMER_WAIT_IN_PLACE_MS } from "../core/index.ts";
import { cacheCtx } from "./run-render.ts";
import type { RunState, Started, Write } from "./run-state.ts";

/** What one step collects while it applies the scheduler's actions. */
export type StepWork = {
  /** Attempts to record as started, launched once the step commits. */
  starts: Started[];
  writes: Write[];
  /** Loop iterations that ended this step: their memory is dropped once the frame shows them. */
  finishedIterations: [loopId: string, iteration: number][];
};

/** Turns one scheduler action into memory changes, writes for the step, and what to do next (undefined: no change). */
export function applyAction(run: RunState, action: Action, nowMs: number, work: StepWork): "done" | { untilMs: number | undefined } | undefined {
  const { setup, settings } = run;
  const { starts, writes } = work;
  switch (action.type) {
    case "finish-run":
      return "done";
    case "suspend":
      // A timer due soon is waited for in place rather than by ending the process.
      if (action.untilMs !== undefined && action.untilMs - nowMs <= (settings.waitInPlaceMs ?? TIMER_WAIT_IN_PLACE_MS)) return { untilMs: action.untilMs };
      run.suspended = action.status;
      run.suspendedUntilMs = action.untilMs;
      return "done";
    case "fire-timer":
    case "expire-wait":
    case "cancel-wait":
      run.waits.settle(action, nowMs, writes);
      return undefined;
    case "wait-slot":
    case "wait-rate":
      run.limits.beginWait(action.task, action, nowMs, writes);
      return undefined;
    case "fail-run":
      // A task dropped from the plan while it ran can still finish what others wait on.
      if (action.failure.kind === "stuck" && run.working.size > 0) return { untilMs: undefined };
      run.fail(failureError(action.failure, { lastErrors: run.lastErrors, states: setup.states }));
      return "done";
    case "wait":
      return { untilMs: action.untilMs };
    case "continue-as-new":
      run.continueFrom = action.from;
      return "done";
    case "start":
    case "retry": {
      const { task } = action;
      const tracked = run.tracked(task);
      if (task.mode === "timer") {
        run.waits.startTimer(task, tracked, nowMs, writes);
        return undefined;
      }
      if (task.mode === "approval") {
        run.waits.requestApproval(task, nowMs, writes);
        return undefined;
      }
      if (task.mode === "event") {
        run.waits.startEventWait(task, nowMs, writes);
        return undefined;
      }
      if (task.mode === "human") {
        run.waits.askHuman(task, nowMs, 1, writes);
        return undefined;
      }
      // <Task needsApproval>: the first start asks a person instead; once approved the task runs.
      if (task.approval?.mode === "gate" && !tracked.gatePassed) {
        run.waits.requestApproval(task, nowMs, writes);
        return undefined;
      }
      if (tracked.abandons >= task.maxAbandons) {
        failCrashLoop(run, task, tracked, nowMs, writes);
        return undefined;
      }
      // A child run may run agents too: a subflow is held like an agent task.
      if (task.mode === "agent" || task.mode === "subflow") {
        const held = budgetStop(setup.runId, setup.budget, run.usage, run.unpricedModel);
        if (held) {
          run.budgetHeld ??= held;
          return undefined; // not started: the run fails with it once nothing else runs (see runStep)
        }
      }
      const attempt = tracked.lastAttempt + 1;
      const ids = { nodeId: task.nodeId, iteration: task.iteration, attempt };
      // Built field by field (a start per task): the optional fields only when they apply.
      const input: AttemptInput = {
        db: run.db,
        runId: setup.runId,
        task,
        info: run.resolve(task),
        attempt,
        input: setup.input,
        runSignal: run.stop.signal,
        now: run.now,
        clock: run.clock,
        startedAtMs: nowMs,
        waitInPlaceMs: settings.waitInPlaceMs,
        rootDir: setup.rootDir,
      };
      // A static value records no tool calls (no body, no agent) unless its memory retains it.
      if (task.mode !== "static" || task.memory) input.onToolCall = (e) => run.emit({ ...e, ...ids });
      if (task.mode === "agent") {
        input.onAgentEvent = (event: AgentEvent) => run.agentOutput.onAgentEvent(ids, event);
        input.onAgentFallback = (fallback: AgentFallback) => run.emit({ type: "AgentFallback", ...ids, ...fallback });
      }
      if (task.mode === "subflow") {
        input.budget = { budget: setup.budget, spent: run.usage, ...(settings.pricing ? { pricing: settings.pricing } : {}) };
        if (settings.startChildRun) input.startChildRun = settings.startChildRun;
      }
      if (settings.pricing) input.pricing = settings.pricing;
      if (task.memory && run.wf.memory) input.memory = { ...run.wf.memory, workflowName: run.plan?.workflowName ?? run.wf.name };
      if (task.cache) input.cache = { workflowName: run.plan?.workflowName ?? run.wf.name, ctx: () => cacheCtx(run, task) };
      starts.push({ task, tracked, input });
      return undefined;
    }
    case "skip": {
      const { task } = action;
      const info = { tableName: run.tableNameOf(task) };
      writes.push(async (q) => {
        await nodes.upsertNode(q, {
          runId: setup.runId,
          nodeId: task.nodeId,
          iteration: task.iteration,
          state: "skipped",
          updatedAtMs: nowMs,
          outputTable: info.tableName,
          label: task.label ?? null,
        });
        run.emitInTransaction({ type: "NodeSkipped", nodeId: task.nodeId, iteration: task.iteration });
      });
      run.tracked(task).state = "skipped";
      run.finishedIds.add(task.nodeId);
      run.frames.markDirty(task.key);
      return undefined;
    }
    case "advance-loop":
    case "finish-loop": {
      const { loop } = action;
      const state = action.type === "advance-loop" ? { iteration: loop.iteration + 1, done: false } : { iteration: loop.iteration, done: true };
      const type = action.type === "advance-loop" ? "LoopAdvanced" : "LoopFinished";
      // Only the loop's latest state is stored: steps batched into one transaction (see
      // PureStepBatch) each move the loop on, and every write of a loop not yet committed is in
      // the transaction that runs this one (steps run one at a time, each commits or joins the
      // batch before the next decides), so an earlier write whose successor exists is replaced
      // by it in the same commit. Its event is staged either way.
      const token = {};
      run.loopWrites.set(loop.loopId, token);
      writes.push(async (q) => {
        if (run.loopWrites.get(loop.loopId) === token) await ralph.setLoopState(q, { runId: setup.runId, ralphId: loop.loopId, ...state, updatedAtMs: nowMs });
        run.emitInTransaction({ type, loopId: loop.loopId, iteration: state.iteration });
      });
      if (action.type === "advance-loop") work.finishedIterations.push([loop.loopId, loop.iteration]);
      setup.loops.set(loop.loopId, state);
      run.renderStale = true;
      return undefined;
    }
  }
}

/** A task whose process died under it `maxAbandons` times fails instead of starting again. */
function failCrashLoop(run: RunState, task: PlanTask, t: TrackedNode, nowMs: number, writes: Write[]): void {
  const ids = { nodeId: task.nodeId, iteration: task.iteration, attempt: t.lastAttempt };
  const error = new SmithersError(
    "TASK_CRASH_LOOP",
    `Task "${task.nodeId}" was abandoned ${t.abandons} times because the process running it died each time (maxAbandons ${task.maxAbandons}); it is not started again`,
    { ...ids, abandons: t.abandons, maxAbandons: task.maxAbandons },
  );
  t.state = "failed";
  run.noteError(task.key, error);
  run.frames.markDirty(task.key);
  const info = run.resolve(task);
  writes.push(async (q) => {
    await nodes.upsertNode(q, {
      runId: run.setup.runId,
      ...ids,
      state: "failed",
      lastAttempt: ids.attempt,
      errorJson: JSON.stringify(errorSummaryJson(error)),
      updatedAtMs: nowMs,
      outputTable: info.tableName,
      label: task.label ?? null,
    });
    run.emitInTransaction({ type: "NodeFailed", ...ids, error: errorSummaryJson(error) });
  });
}
