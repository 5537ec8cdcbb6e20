/**
 * Rendering a run's plan: the workflow's build function called with a ctx read from the run's
 * memory (loops, node states, the output index), again until what the ctx was built from
 * matches the plan, and not at all while nothing the last render read changed.
 */
import { loadOutputRows, readOutputKeys } from "../../db/index.ts";
import { SmithersError } from "../../errors/index.ts";
import { nodeKey, render, withRenderContext, type CacheKeyContext, type Plan, type PlanNode, type PlanTask } from "../../jsx/index.ts";
import { buildCtx } from "../workflow/index.ts";
import { GC_AFTER_TASKS } from "../core/index.ts";
import { describeFailure } from "../schedule/index.ts";
import { failureIn } from "../schedule/index.ts";
import type { RunState } from "./run-state.ts";

/**
 * Renders until what the ctx was built from matches the plan: the node->loop map, and the set
 * of output tables (a custom table first named by `output=` has its rows loaded, then the
 * tree is rendered again). The build function is a pure function of ctx, so while nothing it
 * read changed the last plan is reused.
 */
export function renderPlan(run: RunState): Plan | Promise<Plan> {
  // Most steps of a static tree: no render, and no promise made to say so.
  if (!run.renderStale && run.plan) return run.plan;
  return renderAgain(run);
}

async function renderAgain(run: RunState): Promise<Plan> {
  const first = run.plan === undefined;
  const { setup, wf } = run;
  for (let pass = 0; ; pass++) {
    const tablesBefore = wf.registry.all().length;
    const reads = new Set<string>();
    let readsStates = false;
    const ctx = buildCtx({
      runId: setup.runId,
      input: setup.input,
      registry: wf.registry,
      iteration: run.activeIteration(),
      iterations: iterationsOf(setup.loops),
      iterationOf: run.iterationOf,
      onRead: (tableKey, nodeId) => reads.add(`${tableKey}\0${nodeId}`),
      index: run.index,
      nodeState: (nodeId, iteration) => {
        readsStates = true;
        return setup.states.get(nodeKey(nodeId, iteration))?.state;
      },
    });
    // A catch function is called with what failed, which any step can change: such a render renders every step.
    const failureOf = (node: PlanNode) => {
      readsStates = true;
      const failure = failureIn(node, setup.states, run.now());
      return failure && describeFailure(failure, { lastErrors: run.lastErrors, states: setup.states });
    };
    let plan: Plan;
    try {
      plan = withRenderContext(ctx, () => render(wf.build(ctx), setup.loops), { failureIn: failureOf });
    } catch (error) {
      throw error instanceof SmithersError
        ? error
        : new SmithersError("INVALID_WORKFLOW", `Rendering the workflow failed: ${(error as Error)?.message ?? String(error)}`, { cause: error });
    }
    run.reads = reads;
    run.readsStates = readsStates;
    // Which loop each task is in: the same as the last render's (the usual case) keeps the map it made.
    let membership = run.membership;
    let loopTasks = 0;
    for (const task of plan.tasks) {
      if (task.mode !== "timer") run.resolve(task);
      if (task.loopId === undefined) continue;
      loopTasks++;
      if (membership === run.membership && membership.get(task.nodeId) !== task.loopId) membership = new Map();
    }
    if (membership !== run.membership || loopTasks !== membership.size) {
      membership = new Map();
      for (const task of plan.tasks) if (task.loopId !== undefined) membership.set(task.nodeId, task.loopId);
    }
    run.limits.check(plan);
    const newTables = wf.registry.all().slice(tablesBefore);
    for (const info of newTables) {
      if (setup.outputRows) {
        for (const row of await loadOutputRows(run.db, info, setup.runId)) run.index.addStored(info.key, row);
        continue;
      }
      const keys = await run.db.read("loadOutputKeys", async (q) => await readOutputKeys(q, info, setup.runId));
      for (const k of keys) run.index.addKey(info.key, k.nodeId, k.iteration);
    }
    const stable = newTables.length === 0 && membership === run.membership;
    run.membership = membership;
    run.plan = plan;
    if (stable || pass >= 2) {
      run.renderStale = false;
      if (first && plan.tasks.length >= GC_AFTER_TASKS) Bun.gc(true); // see GC_AFTER_TASKS
      return plan;
    }
  }
}

/** What a task's `cache.by` reads: the ctx a render sees, at the task's iteration, with its node id. */
export function cacheCtx(run: RunState, task: PlanTask): CacheKeyContext {
  const { setup } = run;
  const ctx = buildCtx({
    runId: setup.runId,
    input: setup.input,
    registry: run.wf.registry,
    iteration: task.iteration,
    iterations: iterationsOf(setup.loops),
    iterationOf: run.iterationOf,
    index: run.index,
  });
  return { ...ctx, nodeId: task.nodeId };
}

/** Each loop's current iteration, by loop id (what ctx.iterations holds). */
function iterationsOf(loops: ReadonlyMap<string, { iteration: number }>): Record<string, number> {
  const iterations: Record<string, number> = {};
  for (const [id, loop] of loops) iterations[id] = loop.iteration;
  return iterations;
}
