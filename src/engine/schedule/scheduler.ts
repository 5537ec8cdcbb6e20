/**
 * The scheduler: a pure function from (plan, node states, clock) to actions. It never touches
 * the database; the actuator performs what it decides. Tested without SQLite.
 */
import { childNodes, type Plan, type PlanGroup, type PlanLoop, type PlanContinue, type PlanNode, type PlanSaga, type PlanTask } from "../../jsx/plan.ts";
import { failureHandled, indexScopes, peekDone, visitSaga, visitTry, type ScopeIndex } from "./scheduler-compose.ts";
import { heldByLimit } from "./scheduler-limits.ts";
import { isWaiting, type NodeState, type WaitingStatus } from "../core/index.ts";

/** What a failed node failed with (its code decides whether a `<TryCatchFinally catchErrors>` catches it). */
export type NodeError = { code: string; message: string };

export type NodeStatus = {
  state: NodeState;
  /** Earliest time the next attempt may start (retry backoff). */
  retryAtMs?: number;
  /** A waiting node's deadline: when its timer fires, or when its signal wait or human task times out. */
  wakeAtMs?: number;
  /** A failed node's error. */
  error?: NodeError;
};

/** A node as a run tracks it in memory: what decide reads, plus the run's own counts. */
export type TrackedNode = NodeStatus & {
  lastAttempt: number;
  /** Failed attempts that count against `retries` (reset when a failed run is resumed). */
  failures: number;
  /** Attempts abandoned because their process died; the task fails at `maxAbandons` (reset like `failures`). */
  abandons: number;
  /** A `<Task needsApproval>` whose approval was granted: it starts like any task. */
  gatePassed?: boolean;
};

export type Failure =
  | { kind: "task"; task: PlanTask }
  | { kind: "loop-max"; loop: PlanLoop }
  /** Nothing runs, nothing waits on a backoff, yet tasks remain: a dependsOn that can never be met. */
  | { kind: "stuck" }
  /** A `<Saga onFailure="compensate-and-fail">` undid its completed steps after `cause` (unknown once a resume reset it). */
  | { kind: "saga"; saga: PlanSaga; cause: Failure | undefined }
  /** The compensation of step `stepId` failed with `cause` while the saga unwound after `trigger`. */
  | { kind: "compensation"; saga: PlanSaga; stepId: string; cause: Failure; trigger: Failure | undefined }
  /** A task's `deps` ended without the rows it reads (skipped, or failed under continueOnFail). */
  | { kind: "deps"; task: PlanTask; missing: readonly string[] };

/**
 * What the actuator must do. `start` is a task's first attempt, `retry` a later one whose
 * backoff has elapsed; `wait` means nothing can start now: sleep until `untilMs` (a backoff
 * ends) or until a running task settles, whichever is first. `finish-run` and `fail-run` come
 * alone; after `fail-run` no new work starts and in-flight attempts are stopped.
 */
export type Action =
  | { type: "start"; task: PlanTask }
  | { type: "retry"; task: PlanTask }
  | { type: "skip"; task: PlanTask }
  | { type: "advance-loop"; loop: PlanLoop }
  | { type: "finish-loop"; loop: PlanLoop }
  | { type: "wait"; untilMs?: number }
  | { type: "finish-run" }
  /**
   * Nothing can run or is running, and a node waits for the world: the run stops, waiting for a
   * person (an approval or human task), a signal, or a timer; `untilMs` is the earliest deadline
   * (a timer's fire time or a wait's timeout), when it must be looked at again.
   */
  | { type: "suspend"; status: WaitingStatus; untilMs?: number }
  /** A timer's time has come: its node finishes. */
  | { type: "fire-timer"; task: PlanTask }
  /** A signal wait or human task reached its timeout. */
  | { type: "expire-wait"; task: PlanTask }
  /** A ready task whose `concurrencyKey` has no free slot: it waits (`waiting-slot`) until one frees. */
  | { type: "wait-slot"; task: PlanTask }
  /** A ready task whose key's rate window is full: it waits (`waiting-rate`) until `untilMs`. */
  | { type: "wait-rate"; task: PlanTask; untilMs: number }
  /**
   * A node waiting for the world (approval, human task, signal, timer, a `<Subflow>`'s child) in a
   * failure scope that failed: nothing can use its answer any more, so it ends `cancelled` and what it
   * asked for (the gate, the human request, the child run) is closed.
   */
  | { type: "cancel-wait"; task: PlanTask }
  /**
   * A `<ContinueAsNew>` was reached, or a `<Loop continueAsNewEvery>` ended its Nth iteration,
   * and nothing runs any more: the run ends `continued` and a new run carries on. Comes alone.
   */
  | { type: "continue-as-new"; from: ContinueFrom }
  | { type: "fail-run"; failure: Failure };

/** What continues the run: a `<ContinueAsNew>` (with its state), or a loop at an iteration boundary. */
export type ContinueFrom = { kind: "node"; node: PlanContinue } | { kind: "loop"; loop: PlanLoop };

export type Visit = "done" | "busy" | "failed";
export type Cap = { max: number; used: number };

export type Walk = {
  /** The node walked from (the plan's root, or what failureIn looks at). */
  root: PlanNode;
  states: ReadonlyMap<string, NodeStatus>;
  /** Mounted tasks by id, so a dependency resolves to the same loop iteration. */
  tasks: ReadonlyMap<string, PlanTask>;
  nowMs: number;
  actions: Action[];
  failure?: Failure;
  wakeAtMs?: number;
  running: number;
  /** A node waits for a person (approval, human task). */
  waitingPerson: boolean;
  /** A node waits for a signal. */
  waitingEvent: boolean;
  /** A node waits for a concurrency slot (`waiting-slot`). */
  waitingSlot: boolean;
  /** A node waits for a rate window (`waiting-rate`). */
  waitingRate: boolean;
  /** Keys known not to admit a start before a time (Infinity: until a slot frees), see decide. */
  blocked: ReadonlyMap<string, number> | undefined;
  /** A waiting node without `async`: no new task starts anywhere while it waits. */
  barrier: boolean;
  /** The earliest deadline not yet reached: a timer's fire time or a wait's timeout. */
  timerAtMs?: number;
  memo: DecideMemo | undefined;
  /** Node ids with a finished or skipped iteration, when the caller keeps them (see decide). */
  finishedIds: ReadonlySet<string> | undefined;
  /** The first continue-as-new reached: from then on nothing new starts. */
  continueFrom?: ContinueFrom;
  /** The failure scopes around each task, found when a dependsOn on a failed task first asks. */
  scopes?: ScopeIndex;
};

/**
 * What an engine may carry from one decide() to the next on the same plan: how many leading
 * children of each group are done. Done is final within one run (a finished task never runs
 * again; a re-render makes new plan objects), so the walk can start after them and a long
 * Sequence costs O(1) per step instead of O(n). Only valid while states only move forward.
 */
export class DecideMemo {
  private readonly doneBefore = new WeakMap<readonly PlanNode[], number>();
  private readonly tails = new WeakMap<readonly PlanNode[], Tail>();
  private readonly taskIndex = new WeakMap<Plan, ReadonlyMap<string, PlanTask>>();
  private readonly scopeIndex = new WeakMap<PlanNode, ScopeIndex>();
  start(children: readonly PlanNode[]): number {
    return this.doneBefore.get(children) ?? 0;
  }
  setStart(children: readonly PlanNode[], index: number): void {
    this.doneBefore.set(children, index);
  }
  /** What is known of a group's untouched tail (see Tail), found by one scan the first time the group is walked. */
  tail(children: readonly PlanNode[], w: Walk): Tail {
    let found = this.tails.get(children);
    if (!found) {
      let plainFrom = children.length;
      while (plainFrom > 0 && isPlainTask(children[plainFrom - 1]!)) plainFrom--;
      let touchedMax = children.length - 1;
      while (touchedMax >= 0 && untouched(children[touchedMax]!, w)) touchedMax--;
      this.tails.set(children, (found = { plainFrom, touchedMax }));
    }
    return found;
  }
  tasksOf(plan: Plan): ReadonlyMap<string, PlanTask> {
    let found = this.taskIndex.get(plan);
    if (!found) this.taskIndex.set(plan, (found = indexTasks(plan)));
    return found;
  }
  scopesOf(root: PlanNode): ScopeIndex {
    let found = this.scopeIndex.get(root);
    if (!found) this.scopeIndex.set(root, (found = indexScopes(root)));
    return found;
  }
}

const indexTasks = (plan: Plan): ReadonlyMap<string, PlanTask> => new Map(plan.tasks.map((t) => [t.nodeId, t]));

/**
 * A group's children past `touchedMax` have no state yet, and those from `plainFrom` on are plain
 * tasks (no skip, no unresolved deps): such a task does nothing but take a slot when there is one.
 * Nodes get a state only by an action a walk decided (or before the first walk, on resume), so
 * the walk that pushes an action for a child moves `touchedMax` past it. With every slot taken,
 * a walk stops at the untouched plain tail instead of visiting it: a wide Parallel costs what is
 * in flight per step, not its width.
 */
type Tail = { plainFrom: number; touchedMax: number };

function isPlainTask(node: PlanNode): boolean {
  return node.kind === "task" && !node.skip && !(node.unresolvedDeps && node.unresolvedDeps.length > 0);
}

const stateOf = (w: Walk, t: PlanTask) => w.states.get(t.key);

function countRunning(node: PlanNode, w: Walk): number {
  if (node.kind === "task") return stateOf(w, node)?.state === "running" ? 1 : 0;
  const children = childNodes(node);
  // Children past the touched ones have no state, so none of them runs.
  const end = w.memo && node.kind === "parallel" ? w.memo.tail(children, w).touchedMax + 1 : children.length;
  let n = 0;
  for (let i = w.memo?.start(children) ?? 0; i < end; i++) n += countRunning(children[i]!, w);
  return n;
}

/**
 * dependsOn only orders, as the peer documents it ("waits until every listed task is terminal"):
 * a dependency is met once the mounted task with that id (same plan, so same loop iteration) is
 * over: finished, skipped, or failed for good where the run goes on (under continueOnFail, or a
 * failure a `<TryCatchFinally>` catches or a `<Saga>` compensates: see failureHandled); one that
 * reads the row through `deps` then fails with DEPENDENCY_DEADLOCK, as after a skip. A failure
 * nothing handles fails the run, and no dependent of it starts meanwhile (not while a `finally`
 * runs on its way up). `cancelled` is not over here: a stopped attempt runs again; a wait its failed
 * scope cancelled, like a task that scope never started, never ends, and a dependent of it ends the
 * run with DEPENDENCY_DEADLOCK once nothing else can go on. An id not mounted now is met by any
 * finished iteration.
 */
function dependencyMet(id: string, w: Walk): boolean {
  const mounted = w.tasks.get(id);
  if (mounted) {
    const state = stateOf(w, mounted)?.state;
    if (state === "failed")
      return mounted.continueOnFail || failureHandled(mounted, (w.scopes ??= w.memo ? w.memo.scopesOf(w.root) : indexScopes(w.root)), w.states);
    return state === "finished" || state === "skipped";
  }
  if (w.finishedIds) return w.finishedIds.has(id);
  for (const [key, status] of w.states) {
    if (key.slice(0, key.lastIndexOf("#")) === id && (status.state === "finished" || status.state === "skipped")) return true;
  }
  return false;
}

/**
 * A `<Subflow>` whose child run waits: the node holds up only what depends on it (the wait itself
 * is the child's), and once the child is due (`wakeAtMs`: its timer, or now when what it waits for
 * arrived) the node starts again, which resumes the child.
 */
function visitWaitingSubflow(task: PlanTask, status: NodeStatus, caps: Cap[], w: Walk): Visit {
  if (status.wakeAtMs !== undefined && status.wakeAtMs <= w.nowMs) {
    if (caps.every((c) => c.used < c.max)) {
      for (const c of caps) c.used++;
      w.actions.push({ type: "start", task });
    }
    return "busy";
  }
  if (status.wakeAtMs !== undefined) w.timerAtMs = Math.min(w.timerAtMs ?? Infinity, status.wakeAtMs);
  if (status.state === "waiting-approval") w.waitingPerson = true;
  else if (status.state === "waiting-event") w.waitingEvent = true;
  return "busy";
}

function visitTask(task: PlanTask, caps: Cap[], w: Walk): Visit {
  const status = stateOf(w, task);
  if (task.mode === "subflow" && status && isWaiting(status.state)) return visitWaitingSubflow(task, status, caps, w);
  switch (status?.state) {
    case "finished":
    case "skipped":
      return "done";
    case "failed":
      if (task.continueOnFail) return "done";
      w.failure ??= { kind: "task", task };
      return "failed";
    case "running":
      w.running++;
      return "busy";
    case "waiting-timer":
      if ((status.wakeAtMs ?? 0) <= w.nowMs) w.actions.push({ type: "fire-timer", task });
      else w.timerAtMs = Math.min(w.timerAtMs ?? Infinity, status.wakeAtMs!);
      return "busy";
    case "waiting-approval":
    case "waiting-event":
      if (status.wakeAtMs !== undefined && status.wakeAtMs <= w.nowMs) {
        w.actions.push({ type: "expire-wait", task });
        return "busy";
      }
      if (status.wakeAtMs !== undefined) w.timerAtMs = Math.min(w.timerAtMs ?? Infinity, status.wakeAtMs);
      if (status.state === "waiting-event") w.waitingEvent = true;
      else w.waitingPerson = true;
      if (!task.async) w.barrier = true;
      return "busy"; // waiting-slot and waiting-rate fall through: ready tasks held by their key (see heldByLimit)
  }
  if (task.dependsOn.some((id) => !dependencyMet(id, w))) return "busy";
  if (task.unresolvedDeps && task.unresolvedDeps.length > 0 && !task.skip) {
    w.failure ??= { kind: "deps", task, missing: task.unresolvedDeps };
    return "failed";
  }
  if (task.skip) {
    w.actions.push({ type: "skip", task });
    return "busy";
  }
  if (status?.retryAtMs !== undefined && status.retryAtMs > w.nowMs) {
    w.wakeAtMs = Math.min(w.wakeAtMs ?? Infinity, status.retryAtMs);
    return "busy";
  }
  if ((task.concurrencyKey !== undefined || status?.state === "waiting-rate") && heldByLimit(task, status, w)) return "busy";
  if (caps.every((c) => c.used < c.max)) {
    for (const c of caps) c.used++;
    w.actions.push({ type: status?.retryAtMs === undefined ? "start" : "retry", task });
  }
  return "busy";
}

function visitSequence(children: PlanNode[], caps: Cap[], w: Walk): Visit {
  for (let i = w.memo?.start(children) ?? 0; i < children.length; i++) {
    const r = visit(children[i]!, caps, w);
    if (r !== "done") {
      w.memo?.setStart(children, i);
      return r;
    }
  }
  w.memo?.setStart(children, children.length);
  return "done";
}

function visitParallel(group: PlanGroup, caps: Cap[], w: Walk): Visit {
  const inner = group.maxConcurrency === undefined ? caps : [...caps, { max: group.maxConcurrency, used: countRunning(group, w) }];
  let result: Visit = "done";
  let prefix = w.memo?.start(group.children) ?? 0;
  // subtreeConcurrency: children already begun are in flight until done; untouched ones are
  // admitted in document order while there is room (deterministic, so a resume decides the same).
  const cap = group.subtreeConcurrency;
  let inFlight = 0;
  if (cap !== undefined) {
    for (let i = prefix; i < group.children.length; i++) if (!untouched(group.children[i]!, w) && !settled(group.children[i]!, w)) inFlight++;
  }
  // Kept up to date under subtreeConcurrency too: countRunning reads touchedMax for every parallel.
  const tail = w.memo?.tail(group.children, w);
  for (let i = prefix; i < group.children.length; i++) {
    const child = group.children[i]!;
    if (tail && cap === undefined && i > tail.touchedMax && i >= tail.plainFrom && inner.some((c) => c.used >= c.max)) {
      if (result === "done") result = "busy"; // untouched plain tasks wait for a slot: nothing to decide for them
      break;
    }
    const actionsBefore = w.actions.length;
    const admitting = cap !== undefined && untouched(child, w);
    if (admitting && inFlight >= cap) {
      if (result === "done") result = "busy";
      continue;
    }
    const startsBefore = admitting ? w.actions.length : 0;
    const r = visit(child, inner, w);
    // A child takes a slot once it starts something; one still waiting on a dependency does not hold one.
    if (admitting && w.actions.slice(startsBefore).some((a) => a.type === "start" || a.type === "retry" || a.type === "skip")) inFlight++;
    if (tail && w.actions.length > actionsBefore && i > tail.touchedMax) tail.touchedMax = i;
    if (r === "done" && prefix === i) prefix = i + 1;
    if (r === "failed") result = "failed";
    else if (r === "busy" && result === "done") result = "busy";
  }
  w.memo?.setStart(group.children, prefix);
  return result;
}

/** Every task under `node` is over for good (finished, skipped, or failed under continueOnFail). */
function settled(node: PlanNode, w: Walk): boolean {
  if (node.kind === "loop") return node.done;
  // Over once it is done: a caught failure inside, or compensations that never had to run, do not hold it in flight.
  if (node.kind === "try" || node.kind === "saga") return peekDone(node, w, visit);
  if (node.kind === "continue-as-new") return false; // reached, it ends the run
  if (node.kind !== "task") return node.children.every((c) => settled(c, w));
  const state = stateOf(w, node)?.state;
  return state === "finished" || state === "skipped" || (state === "failed" && node.continueOnFail);
}

function untouched(node: PlanNode, w: Walk): boolean {
  if (node.kind === "task") return stateOf(w, node) === undefined;
  return childNodes(node).every((c) => untouched(c, w));
}

function visitLoop(loop: PlanLoop, caps: Cap[], w: Walk): Visit {
  if (loop.done) return "done";
  // `until` is judged at iteration boundaries only, so a pass is never cut off half-way.
  if (loop.until && loop.children.every((c) => untouched(c, w))) {
    w.actions.push({ type: "finish-loop", loop });
    return "busy";
  }
  const r = visitSequence(loop.children, caps, w);
  if (r !== "done") return r;
  if (loop.until) {
    w.actions.push({ type: "finish-loop", loop });
  } else if (loop.iteration + 1 < loop.maxIterations) {
    // Every continueAsNewEvery-th boundary, the next iteration starts in a new run instead.
    if (loop.continueAsNewEvery !== undefined && (loop.iteration + 1) % loop.continueAsNewEvery === 0) w.continueFrom ??= { kind: "loop", loop };
    else w.actions.push({ type: "advance-loop", loop });
  } else if (loop.onMaxReached === "fail") {
    w.failure ??= { kind: "loop-max", loop };
    return "failed";
  } else {
    w.actions.push({ type: "finish-loop", loop });
  }
  return "busy";
}

function visit(node: PlanNode, caps: Cap[], w: Walk): Visit {
  switch (node.kind) {
    case "task":
      return visitTask(node, caps, w);
    case "sequence":
      return visitSequence(node.children, caps, w);
    case "parallel":
      return visitParallel(node, caps, w);
    case "loop":
      return visitLoop(node, caps, w);
    case "try":
      return visitTry(node, caps, w, visit);
    case "saga":
      return visitSaga(node, caps, w, visit);
    case "continue-as-new":
      w.continueFrom ??= { kind: "node", node };
      return "busy";
  }
}

/** A walk of nothing yet from `root`: the states, the clock and the tasks dependsOn resolves against. */
function newWalk(
  root: PlanNode,
  states: ReadonlyMap<string, NodeStatus>,
  tasks: ReadonlyMap<string, PlanTask>,
  nowMs: number,
  memo?: DecideMemo,
  finishedIds?: ReadonlySet<string>,
  blocked?: ReadonlyMap<string, number>,
): Walk {
  return {
    root,
    states,
    tasks,
    nowMs,
    actions: [],
    running: 0,
    waitingPerson: false,
    waitingEvent: false,
    waitingSlot: false,
    waitingRate: false,
    blocked,
    barrier: false,
    memo,
    finishedIds,
  };
}

function tasksUnder(node: PlanNode, into = new Map<string, PlanTask>()): Map<string, PlanTask> {
  if (node.kind === "task") into.set(node.nodeId, node);
  else for (const child of childNodes(node)) tasksUnder(child, into);
  return into;
}

/**
 * The failure `node` has ended with, as decide() would find it (a failure a nested
 * `<TryCatchFinally>` caught is none), or undefined. Pure: what a render asks to call a catch
 * function with.
 */
export function failureIn(node: PlanNode, states: ReadonlyMap<string, NodeStatus>, nowMs: number): Failure | undefined {
  const w = newWalk(node, states, tasksUnder(node), nowMs);
  return visit(node, [{ max: Infinity, used: 0 }], w) === "failed" ? w.failure : undefined;
}

/**
 * Decides what to do next. `maxConcurrency` caps running tasks across the whole run.
 * Once a failure is found no new work starts, so in-flight tasks can settle. `finishedIds`, when
 * given, answers "did any iteration of this unmounted node finish or get skipped" instead of a
 * scan of `states`, so an engine may drop the states of loop iterations that are over.
 * `blocked` is what the engine knows of the limits' keys: a key it found full (Infinity) or whose
 * rate window admits nothing before a time; a ready task under it waits instead of starting.
 */
export function decide(
  plan: Plan,
  states: ReadonlyMap<string, NodeStatus>,
  nowMs: number,
  maxConcurrency = Infinity,
  memo?: DecideMemo,
  finishedIds?: ReadonlySet<string>,
  blocked?: ReadonlyMap<string, number>,
): Action[] {
  const tasks = memo ? memo.tasksOf(plan) : indexTasks(plan);
  const w = newWalk(plan.root, states, tasks, nowMs, memo, finishedIds, blocked);
  const global: Cap = { max: maxConcurrency, used: Number.isFinite(maxConcurrency) ? countRunning(plan.root, w) : 0 };
  const r = visit(plan.root, [global], w);
  if (r === "failed") return [{ type: "fail-run", failure: w.failure! }];
  if (r === "done") return [{ type: "finish-run" }];
  if (w.continueFrom) {
    // Reached: nothing new starts; what runs settles (and what it decides is done) before the run continues.
    const pending = w.actions.filter((a) => a.type !== "start" && a.type !== "retry");
    if (pending.length > 0) return pending;
    if (w.running > 0) return [{ type: "wait" }];
    return [{ type: "continue-as-new", from: w.continueFrom }];
  }
  // A node that waits without `async` holds up the whole run: nothing new starts until it is answered.
  // (A backoff in progress does not matter then either.)
  if (w.barrier) w.actions = w.actions.filter((a) => a.type !== "start" && a.type !== "retry");
  if (w.actions.length > 0) return w.actions;
  if (w.running === 0 && (w.wakeAtMs === undefined || w.barrier)) {
    // What the run waits on, the most specific first: a person, a signal, a slot, a rate window, a time.
    const status: WaitingStatus | undefined = w.waitingPerson
      ? "waiting-approval"
      : w.waitingEvent
        ? "waiting-event"
        : w.waitingSlot
          ? "waiting-slot"
          : w.waitingRate
            ? "waiting-rate"
            : w.timerAtMs !== undefined
              ? "waiting-timer"
              : undefined;
    if (status) return [w.timerAtMs === undefined ? { type: "suspend", status } : { type: "suspend", status, untilMs: w.timerAtMs }];
    return [{ type: "fail-run", failure: { kind: "stuck" } }];
  }
  const untilMs = Math.min(w.wakeAtMs ?? Infinity, w.timerAtMs ?? Infinity);
  return [untilMs === Infinity ? { type: "wait" } : { type: "wait", untilMs }];
}
