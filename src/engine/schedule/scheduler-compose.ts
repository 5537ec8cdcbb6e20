/**
 * The scheduler's part for `<TryCatchFinally>` and `<Saga>`: failure scopes. A subtree is visited
 * as a scope when its failure must not fail the run at once: the failure is handed back, the
 * work the visit asked for is dropped (nothing new starts in a failed scope) and the tasks still
 * running in it settle before the catch or the compensations start. Pure, like decide(): every
 * decision comes from the plan and the node states, so a resumed run decides the same.
 */
import { catchesCode, childNodes, type PlanNode, type PlanSaga, type PlanTask, type PlanTry } from "../../jsx/plan.ts";
// Types only: scheduler.ts imports this module, and hands its visit function in.
import type { Cap, Failure, NodeStatus, Visit, Walk } from "./scheduler.ts";
import { isWaiting } from "../core/index.ts";

type VisitFn = (node: PlanNode, caps: Cap[], w: Walk) => Visit;

/** No task under `node` has a state yet. */
function untouched(node: PlanNode, w: Walk): boolean {
  if (node.kind === "task") return !w.states.has(node.key);
  return childNodes(node).every((c) => untouched(c, w));
}

type ScopeResult = { result: "done" } | { result: "busy" } | { result: "failed"; failure: Failure; settling: boolean };

/** What a scope may change in the walk besides `running`, captured before it is visited. */
function snapshot(w: Walk, caps: Cap[]) {
  const { actions, failure, wakeAtMs, waitingPerson, waitingEvent, barrier, timerAtMs, running } = w;
  return { actions: actions.length, failure, wakeAtMs, waitingPerson, waitingEvent, barrier, timerAtMs, running, used: caps.map((c) => c.used) };
}

function restore(w: Walk, caps: Cap[], s: ReturnType<typeof snapshot>): void {
  w.actions.length = s.actions;
  w.failure = s.failure;
  w.wakeAtMs = s.wakeAtMs;
  w.waitingPerson = s.waitingPerson;
  w.waitingEvent = s.waitingEvent;
  w.barrier = s.barrier;
  w.timerAtMs = s.timerAtMs;
  caps.forEach((c, i) => (c.used = s.used[i]!));
}

/** Asks to cancel every node under `node` that waits for the world: its failed scope will never use the answer. */
function cancelWaits(node: PlanNode, w: Walk): void {
  if (node.kind !== "task") {
    for (const child of childNodes(node)) cancelWaits(child, w);
    return;
  }
  const state = w.states.get(node.key)?.state;
  if (state !== undefined && isWaiting(state)) w.actions.push({ type: "cancel-wait", task: node });
}

/**
 * Visits `node` as a failure scope. On failure nothing the visit asked for is kept (no start,
 * retry, timer or wait of the failed scope) but the cancelling of its waiting nodes, so that no
 * gate, signal or timer of it holds up the run; its running tasks still count as running, and
 * `settling` says some are.
 */
function visitScope(node: PlanNode, caps: Cap[], w: Walk, visit: VisitFn): ScopeResult {
  const s = snapshot(w, caps);
  w.failure = undefined;
  const r = visit(node, caps, w);
  if (r !== "failed") {
    w.failure = s.failure;
    return r === "done" ? { result: "done" } : { result: "busy" };
  }
  const failure = w.failure!;
  restore(w, caps, s);
  cancelWaits(node, w);
  return { result: "failed", failure, settling: w.running > s.running };
}

/** What `node` comes to without asking for anything: the walk is left as it was. */
function peekScope(node: PlanNode, w: Walk, visit: VisitFn): { result: Visit; failure?: Failure } {
  const caps: Cap[] = [{ max: Infinity, used: 0 }];
  const s = snapshot(w, caps);
  w.failure = undefined;
  const result = visit(node, caps, w);
  const failure = w.failure;
  restore(w, caps, s);
  w.running = s.running;
  return result === "failed" ? { result, failure } : { result };
}

/** Whether `node` is done (nothing left to run in it), asking for nothing. */
export function peekDone(node: PlanNode, w: Walk, visit: VisitFn): boolean {
  return peekScope(node, w, visit).result === "done";
}

/** Passes a failure up the walk (the first one found is the run's). */
function fail(w: Walk, failure: Failure): Visit {
  w.failure ??= failure;
  return "failed";
}

/** The stable code a failure reports: what `catchErrors` is matched against. */
export function failureCode(failure: Failure, states: ReadonlyMap<string, NodeStatus>): string {
  switch (failure.kind) {
    case "task":
      return states.get(failure.task.key)?.error?.code ?? "TASK_FAILED";
    case "loop-max":
      return "RALPH_MAX_REACHED";
    case "stuck":
    case "deps":
      return "DEPENDENCY_DEADLOCK";
    case "saga":
      return failure.cause ? failureCode(failure.cause, states) : "SAGA_FAILED";
    case "compensation":
      return "SAGA_COMPENSATION_FAILED";
  }
}

/** A failure scope around a task, and the part of it the task is in. */
type Around = { scope: PlanTry; section: "block" | "catch" | "finally" } | { scope: PlanSaga; section: "action" | "compensation" };
/** For each task inside a failure scope, the scopes around it, innermost first (tasks in none are absent). */
export type ScopeIndex = ReadonlyMap<string, readonly Around[]>;

/** The failure scopes around each task under `root` (found once per plan, and only when a dependsOn asks). */
export function indexScopes(root: PlanNode): ScopeIndex {
  const found = new Map<string, readonly Around[]>();
  const walk = (node: PlanNode, around: readonly Around[]): void => {
    if (node.kind === "task") {
      if (around.length > 0) found.set(node.key, around);
    } else if (node.kind === "try") {
      walk(node.block, [{ scope: node, section: "block" }, ...around]);
      if (node.catch) walk(node.catch, [{ scope: node, section: "catch" }, ...around]);
      if (node.finally) walk(node.finally, [{ scope: node, section: "finally" }, ...around]);
    } else if (node.kind === "saga") {
      for (const step of node.steps) {
        walk(step.action, [{ scope: node, section: "action" }, ...around]);
        walk(step.compensation, [{ scope: node, section: "compensation" }, ...around]);
      }
    } else {
      for (const child of childNodes(node)) walk(child, around);
    }
  };
  walk(root, []);
  return found;
}

/**
 * Whether the failure of `task` (failed for good, not continueOnFail) is handled on its way up, so
 * the run goes on: a `<TryCatchFinally>` whose block holds it catches its code (a catch function not
 * mounted yet counts: the next render mounts it), or a `<Saga onFailure="compensate">` step's action
 * holds it. From a compensation it goes up as SAGA_COMPENSATION_FAILED. Judged by the task's own code:
 * a block that failed twice is caught by its first failure's, which may differ (then a dependent
 * waits, or is stopped with the run).
 */
export function failureHandled(task: PlanTask, scopes: ScopeIndex, states: ReadonlyMap<string, NodeStatus>): boolean {
  let code = states.get(task.key)?.error?.code ?? "TASK_FAILED";
  for (const { scope, section } of scopes.get(task.key) ?? []) {
    if (scope.kind === "try") {
      const catching = scope.catch !== undefined || scope.catchFn;
      if (section === "block" && catching && catchesCode(scope.catchErrors, code)) return true;
    } else if (section === "action") {
      if (scope.onFailure === "compensate") return true;
    } else {
      code = "SAGA_COMPENSATION_FAILED";
    }
  }
  return false;
}

/**
 * try: the block; on a failure it catches (once the block's running tasks settled) the catch;
 * then finally, which also runs before an uncaught failure or a failed catch goes on up.
 * A failure of finally itself goes up in place of any other.
 */
export function visitTry(node: PlanTry, caps: Cap[], w: Walk, visit: VisitFn): Visit {
  const block = visitScope(node.block, caps, w, visit);
  if (block.result === "busy") return "busy";
  let pending: Failure | undefined;
  if (block.result === "failed") {
    const caught = node.catch !== undefined && catchesCode(node.catchErrors, failureCode(block.failure, w.states));
    // With nothing to run before it goes up, the failure goes up at once, like any other.
    if (!caught && !node.finally) return fail(w, block.failure);
    if (block.settling) return "busy";
    if (caught) {
      const handler = visitScope(node.catch!, caps, w, visit);
      if (handler.result === "busy") return "busy";
      if (handler.result === "failed") {
        if (!node.finally) return fail(w, handler.failure);
        if (handler.settling) return "busy";
        pending = handler.failure;
      }
    } else {
      pending = block.failure;
    }
  }
  if (node.finally) {
    const last = visit(node.finally, caps, w);
    if (last !== "done") return last;
  }
  return pending ? fail(w, pending) : "done";
}

/** Some task under `node` finished: the step's action did something to undo. */
function ranAny(node: PlanNode, w: Walk): boolean {
  if (node.kind === "task") return w.states.get(node.key)?.state === "finished";
  return childNodes(node).some((c) => ranAny(c, w));
}

/**
 * saga: the actions in order. Once one fails (and the scope settled), the compensations of the
 * steps before it whose action ran run one at a time, last step first; a failed compensation
 * stops there and fails the run. Once any compensation has a state the saga only unwinds, even
 * if a resume of the failed run gave the failed action a fresh attempt: an undone step is never
 * run forward again.
 */
export function visitSaga(node: PlanSaga, caps: Cap[], w: Walk, visit: VisitFn): Visit {
  const unwinding = node.steps.some((s) => !untouched(s.compensation, w));
  let failedAt = node.steps.length;
  let trigger: Failure | undefined;
  for (let i = 0; i < node.steps.length; i++) {
    const action = node.steps[i]!.action;
    if (unwinding) {
      const peek = peekScope(action, w, visit);
      if (peek.result === "done") continue;
      failedAt = i;
      trigger = peek.failure;
      break;
    }
    const r = visitScope(action, caps, w, visit);
    if (r.result === "done") continue;
    if (r.result === "busy") return "busy";
    if (node.onFailure === "fail") return fail(w, r.failure);
    if (r.settling) return "busy";
    failedAt = i;
    trigger = r.failure;
    break;
  }
  if (!unwinding && trigger === undefined) return "done";
  for (let i = failedAt - 1; i >= 0; i--) {
    const step = node.steps[i]!;
    if (!ranAny(step.action, w)) continue; // every task of it was skipped: nothing to undo
    const r = visitScope(step.compensation, caps, w, visit);
    if (r.result === "done") continue;
    if (r.result === "busy") return "busy";
    return fail(w, { kind: "compensation", saga: node, stepId: step.id, cause: r.failure, trigger });
  }
  return node.onFailure === "compensate-and-fail" ? fail(w, { kind: "saga", saga: node, cause: trigger }) : "done";
}
