import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { decide, failureIn, type Action, type NodeStatus } from "../../src/engine/schedule/scheduler.ts";
import type { NodeState } from "../../src/engine/core/states.ts";
import { jsx } from "../../src/jsx/jsx-runtime.ts";
import { nodeKey, Parallel, render, Saga, Sequence, Task, TryCatchFinally, Workflow, type PlanTry, type SmithersNode } from "../../src/jsx/index.ts";

// Built with jsx() calls so this file stays a .ts file; the shapes are the same as JSX.
const out = z.object({ n: z.number() });
const task = (id: string, opts: { skipIf?: boolean } = {}) => jsx(Task, { id, output: out, ...opts, children: { n: 1 } }, id);
const wf = (...children: SmithersNode[]) => jsx(Workflow, { name: "w", children });
const seq = (...children: SmithersNode[]) => jsx(Sequence, { children });
const par = (...children: SmithersNode[]) => jsx(Parallel, { children });
type TryOpts = { try: SmithersNode; catch?: SmithersNode; finally?: SmithersNode; catchErrors?: string[] };
const tcf = (opts: TryOpts) => jsx(TryCatchFinally, opts);
type Step = { id: string; action: SmithersNode; compensation: SmithersNode };
const saga = (steps: Step[], onFailure?: "compensate" | "compensate-and-fail" | "fail") => jsx(Saga, { id: "s", steps, onFailure });
/** Steps 1..n, each action `aN` compensated by `cN`. */
const steps = (n: number): Step[] => Array.from({ length: n }, (_, i) => ({ id: `${i + 1}`, action: task(`a${i + 1}`), compensation: task(`c${i + 1}`) }));

const NOW = 1_000;

type Entry = NodeState | NodeStatus;
/** states from `{ a: "finished", b: { state: "failed", error } }`, all at iteration 0. */
function states(entries: Record<string, Entry> = {}): Map<string, NodeStatus> {
  return new Map(Object.entries(entries).map(([id, v]) => [nodeKey(id, 0), typeof v === "string" ? { state: v } : v]));
}
const failed = (code: string): NodeStatus => ({ state: "failed", error: { code, message: `${code} happened` } });

/** Actions as short strings: "start a", "fail-run task", "finish-run", "wait". */
function summary(actions: Action[]): string[] {
  return actions.map((a) => {
    if (a.type === "start" || a.type === "retry" || a.type === "skip") return `${a.type} ${a.task.nodeId}`;
    if (a.type === "fail-run") return `fail-run ${a.failure.kind}`;
    return a.type;
  });
}

const run = (root: SmithersNode, entries: Record<string, Entry> = {}) => summary(decide(render(root), states(entries), NOW));
const failureOf = (root: SmithersNode, entries: Record<string, Entry>) => {
  const fail = decide(render(root), states(entries), NOW).find((a) => a.type === "fail-run");
  return fail?.type === "fail-run" ? fail.failure : undefined;
};

describe("decide: TryCatchFinally", () => {
  const guarded = wf(tcf({ try: seq(task("a"), task("b")), catch: task("recover"), finally: task("cleanup") }), task("after"));

  test("runs the try block first, and nothing of catch or finally", () => {
    expect(run(guarded)).toEqual(["start a"]);
  });

  test("a failure in try starts the catch instead of failing the run", () => {
    expect(run(guarded, { a: failed("TASK_FAILED") })).toEqual(["start recover"]);
  });

  test("finally starts after the try block finished, and the catch never does", () => {
    expect(run(guarded, { a: "finished", b: "finished" })).toEqual(["start cleanup"]);
    expect(run(guarded, { a: "finished", b: "finished", cleanup: "finished" })).toEqual(["start after"]);
  });

  test("finally starts after the catch finished, and the workflow goes on after it", () => {
    expect(run(guarded, { a: failed("TASK_FAILED"), recover: "finished" })).toEqual(["start cleanup"]);
    expect(run(guarded, { a: failed("TASK_FAILED"), recover: "finished", cleanup: "finished" })).toEqual(["start after"]);
  });

  test("the catch waits until the try's other running tasks settled, and nothing new starts in the failed try", () => {
    const root = wf(tcf({ try: par(task("a"), task("b"), task("c")), catch: task("recover") }));
    expect(run(root, { a: failed("TASK_FAILED"), b: "running" })).toEqual(["wait"]);
    expect(run(root, { a: failed("TASK_FAILED"), b: "finished" })).toEqual(["start recover"]);
  });

  test("a failure whose code catchErrors does not list runs finally, then fails the run with that failure", () => {
    const root = wf(tcf({ try: task("a"), catch: task("recover"), catchErrors: ["TASK_TIMEOUT"], finally: task("cleanup") }));
    expect(run(root, { a: failed("TASK_FAILED") })).toEqual(["start cleanup"]);
    const failure = failureOf(root, { a: failed("TASK_FAILED"), cleanup: "finished" });
    expect(failure?.kind === "task" && failure.task.nodeId).toBe("a");
    expect(run(root, { a: failed("TASK_TIMEOUT") })).toEqual(["start recover"]);
  });

  test("a failed catch runs finally, then fails the run with the catch's failure", () => {
    expect(run(guarded, { a: failed("TASK_FAILED"), recover: failed("AGENT_FAILED") })).toEqual(["start cleanup"]);
    const failure = failureOf(guarded, { a: failed("TASK_FAILED"), recover: failed("AGENT_FAILED"), cleanup: "finished" });
    expect(failure?.kind === "task" && failure.task.nodeId).toBe("recover");
  });

  test("a failure with neither a catch nor a finally fails the run at once, as outside a boundary", () => {
    const root = wf(tcf({ try: par(task("a"), task("b")) }));
    expect(run(root, { a: failed("TASK_FAILED"), b: "running" })).toEqual(["fail-run task"]);
  });

  test("a failed finally fails the run", () => {
    expect(run(guarded, { a: "finished", b: "finished", cleanup: failed("TASK_FAILED") })).toEqual(["fail-run task"]);
  });

  test("an inner boundary's uncaught failure is caught by the outer one", () => {
    const inner = tcf({ try: task("a"), catch: task("inner-catch"), catchErrors: ["TASK_TIMEOUT"] });
    const root = wf(tcf({ try: inner, catch: task("outer-catch") }));
    expect(run(root, { a: failed("TASK_FAILED") })).toEqual(["start outer-catch"]);
    expect(run(root, { a: failed("TASK_TIMEOUT") })).toEqual(["start inner-catch"]);
  });

  test("under <Parallel subtreeConcurrency>, a boundary whose failure was caught is over once its catch finished", () => {
    const root = wf(jsx(Parallel, { subtreeConcurrency: 1, children: [tcf({ try: task("a"), catch: task("recover") }), task("b")] }));
    expect(run(root, { a: failed("TASK_FAILED"), recover: "running" })).toEqual(["wait"]);
    expect(run(root, { a: failed("TASK_FAILED"), recover: "finished" })).toEqual(["start b"]);
  });

  test("failureIn gives a try block's failure, and none once a boundary inside it caught it", () => {
    const plan = render(wf(tcf({ try: seq(task("a"), tcf({ try: task("b"), catch: task("c") })) })));
    const block = (plan.root.children[0] as PlanTry).block;
    const fromA = failureIn(block, states({ a: failed("TASK_FAILED") }), NOW);
    expect(fromA?.kind === "task" && fromA.task.nodeId).toBe("a");
    expect(failureIn(block, states({ a: "finished", b: failed("TASK_FAILED") }), NOW)).toBeUndefined();
    expect(failureIn(block, states({ a: "running" }), NOW)).toBeUndefined();
  });
});

describe("decide: what a failed scope leaves behind", () => {
  const dependent = (id: string, on: string) => jsx(Task, { id, output: out, dependsOn: [on], children: { n: 1 } }, id);

  test("waiting nodes of a failed try block are cancelled in the step that starts the catch, and only while they wait", () => {
    const guarded = wf(tcf({ try: par(task("gate"), task("timer"), task("a")), catch: task("recover") }));
    const cancels = (entries: Record<string, Entry>) =>
      decide(render(guarded), states(entries), NOW).map((a) => (a.type === "cancel-wait" ? `cancel-wait ${a.task.nodeId}` : summary([a])[0]));
    expect(cancels({ gate: "waiting-approval", timer: { state: "waiting-timer", wakeAtMs: NOW + 60_000 }, a: failed("TASK_FAILED") })).toEqual([
      "cancel-wait gate",
      "cancel-wait timer",
      "start recover",
    ]);
    expect(cancels({ gate: "cancelled", timer: "cancelled", a: failed("TASK_FAILED"), recover: "running" })).toEqual(["wait"]);
  });

  test("an uncaught failure fails the run alone: no cancel-wait comes with fail-run", () => {
    expect(run(wf(tcf({ try: par(task("gate"), task("a")), finally: undefined })), { gate: "waiting-approval", a: failed("TASK_FAILED") })).toEqual([
      "fail-run task",
    ]);
  });

  test("a task that dependsOn a caught task starts once it failed; one depending on a wait the failed block cancelled does not", () => {
    const root = wf(par(tcf({ try: par(task("a"), task("gate")), catch: task("recover") }), dependent("b", "a"), dependent("c", "gate")));
    expect(run(root, { a: failed("TASK_FAILED"), gate: "cancelled", recover: "running" })).toEqual(["start b"]);
    expect(run(root, { a: failed("TASK_FAILED"), gate: "cancelled", recover: "finished", b: "finished" })).toEqual(["fail-run stuck"]);
  });

  test("a task that dependsOn an uncaught failed task never starts: the run fails", () => {
    expect(run(wf(par(task("a"), dependent("b", "a"))), { a: failed("TASK_FAILED") })).toEqual(["fail-run task"]);
  });

  test("a dependent of a failure the boundary does not catch does not start while its finally runs", () => {
    const root = wf(par(tcf({ try: task("a"), catch: task("recover"), catchErrors: ["TASK_TIMEOUT"], finally: task("cleanup") }), dependent("b", "a")));
    expect(run(root, { a: failed("TASK_FAILED") })).toEqual(["start cleanup"]);
    expect(run(root, { a: failed("TASK_TIMEOUT") })).toEqual(["start recover", "start b"]);
  });

  test("an inner boundary that does not catch hands the failure to an outer one that does: the dependent starts", () => {
    const inner = tcf({ try: task("a"), catch: task("inner-recover"), catchErrors: ["TASK_TIMEOUT"] });
    const root = wf(par(tcf({ try: inner, catch: task("outer-recover") }), dependent("b", "a")));
    expect(run(root, { a: failed("TASK_FAILED") })).toEqual(["start outer-recover", "start b"]);
  });

  test("a failed saga action is handled when the saga compensates, not when it fails", () => {
    const withSaga = (onFailure: "compensate" | "fail") => wf(par(saga(steps(2), onFailure), dependent("b", "a2")));
    expect(run(withSaga("compensate"), { a1: "finished", a2: failed("TASK_FAILED") })).toEqual(["start c1", "start b"]);
    expect(run(withSaga("fail"), { a1: "finished", a2: failed("TASK_FAILED") })).toEqual(["fail-run task"]);
  });
});

describe("decide: Saga", () => {
  test("steps' actions run one at a time, in order, and a saga that completes starts no compensation", () => {
    const root = wf(saga(steps(3)), task("after"));
    expect(run(root)).toEqual(["start a1"]);
    expect(run(root, { a1: "finished" })).toEqual(["start a2"]);
    expect(run(root, { a1: "finished", a2: "finished", a3: "finished" })).toEqual(["start after"]);
  });

  test("after a failed step the completed steps are compensated last first, one at a time", () => {
    const root = wf(saga(steps(4)));
    const done = { a1: "finished", a2: "finished", a3: failed("TASK_FAILED") } as const;
    expect(run(root, done)).toEqual(["start c2"]);
    expect(run(root, { ...done, c2: "running" })).toEqual(["wait"]);
    expect(run(root, { ...done, c2: "finished" })).toEqual(["start c1"]);
    expect(run(root, { ...done, c2: "finished", c1: "finished" })).toEqual(["finish-run"]);
  });

  test("compensations wait until the failed step's running tasks settled", () => {
    const root = wf(saga([...steps(1), { id: "2", action: par(task("x"), task("y")), compensation: task("c2") }]));
    expect(run(root, { a1: "finished", x: failed("TASK_FAILED"), y: "running" })).toEqual(["wait"]);
    expect(run(root, { a1: "finished", x: failed("TASK_FAILED"), y: "finished" })).toEqual(["start c1"]);
  });

  test("under <Parallel subtreeConcurrency>, a saga that completed is over though its compensations never ran", () => {
    const root = wf(jsx(Parallel, { subtreeConcurrency: 1, children: [saga(steps(1)), task("b")] }));
    expect(run(root, { a1: "running" })).toEqual(["wait"]);
    expect(run(root, { a1: "finished" })).toEqual(["start b"]);
  });

  test("a step whose every task was skipped has nothing to undo", () => {
    const root = wf(saga([{ id: "1", action: task("a1", { skipIf: true }), compensation: task("c1") }, ...steps(3).slice(1)]));
    expect(run(root, { a1: "skipped", a2: "finished", a3: failed("TASK_FAILED") })).toEqual(["start c2"]);
    expect(run(root, { a1: "skipped", a2: "finished", a3: failed("TASK_FAILED"), c2: "finished" })).toEqual(["finish-run"]);
  });

  test('onFailure "fail" fails the run at once and compensates nothing', () => {
    expect(run(wf(saga(steps(2), "fail")), { a1: "finished", a2: failed("TASK_FAILED") })).toEqual(["fail-run task"]);
  });

  test('onFailure "compensate-and-fail" fails with the step\'s failure once the compensations finished', () => {
    const root = wf(saga(steps(2), "compensate-and-fail"));
    expect(run(root, { a1: "finished", a2: failed("TASK_FAILED") })).toEqual(["start c1"]);
    const failure = failureOf(root, { a1: "finished", a2: failed("TASK_FAILED"), c1: "finished" });
    expect(failure?.kind).toBe("saga");
    expect(failure?.kind === "saga" && failure.cause?.kind === "task" && failure.cause.task.nodeId).toBe("a2");
  });

  test("a failed compensation fails the run, and the compensations of earlier steps do not start", () => {
    const root = wf(saga(steps(3)));
    const failure = failureOf(root, { a1: "finished", a2: "finished", a3: failed("TASK_FAILED"), c2: failed("TASK_FAILED") });
    expect(failure?.kind).toBe("compensation");
    expect(failure?.kind === "compensation" && [failure.stepId, failure.cause.kind === "task" && failure.cause.task.nodeId]).toEqual(["2", "c2"]);
  });

  test("once a compensation has a state the saga only unwinds: a failed step reset to pending never runs again", () => {
    // What a resume of the failed run leaves: every failed node pending again.
    const root = wf(saga(steps(3)));
    expect(run(root, { a1: "finished", a2: "finished", a3: "pending", c2: "pending" })).toEqual(["start c2"]);
    expect(run(root, { a1: "finished", a2: "finished", a3: "pending", c2: "finished" })).toEqual(["start c1"]);
    expect(failureOf(wf(saga(steps(2), "compensate-and-fail")), { a1: "finished", a2: "pending", c1: "finished" })).toMatchObject({
      kind: "saga",
      cause: undefined,
    });
  });
});
