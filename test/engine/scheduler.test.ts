import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { decide, type Action, type NodeStatus } from "../../src/engine/scheduler.ts";
import type { NodeState } from "../../src/engine/states.ts";
import { jsx } from "../../src/jsx/jsx-runtime.ts";
import { Loop, nodeKey, Parallel, render, Sequence, Task, Workflow, type LoopState, type SmithersNode } from "../../src/jsx/index.ts";

// Built with jsx() calls so this file stays a .ts file; the shapes are the same as JSX.
const out = z.object({ n: z.number() });
type TaskOpts = { skipIf?: boolean; continueOnFail?: boolean; dependsOn?: string[] };
const task = (id: string, opts: TaskOpts = {}) => jsx(Task, { id, output: out, ...opts, children: { n: 1 } }, id);
const wf = (...children: SmithersNode[]) => jsx(Workflow, { name: "w", children });
const seq = (...children: SmithersNode[]) => jsx(Sequence, { children });
const par = (maxConcurrency: number | undefined, ...children: SmithersNode[]) => jsx(Parallel, { maxConcurrency, children });
type LoopOpts = { until: boolean; maxIterations?: number; onMaxReached?: "fail" | "return-last" };
const loop = (id: string, opts: LoopOpts, ...children: SmithersNode[]) => jsx(Loop, { id, ...opts, children });

const NOW = 1_000;

/** states from `{ "a#0": "finished", ... }` or `{ "a#0": { state, retryAtMs } }`. */
function states(entries: Record<string, NodeState | NodeStatus> = {}): Map<string, NodeStatus> {
  return new Map(Object.entries(entries).map(([k, v]) => [k, typeof v === "string" ? { state: v } : v]));
}

function plan(root: SmithersNode, loops: Record<string, LoopState> = {}) {
  return render(root, new Map(Object.entries(loops)));
}

/** Actions as short strings: "start a#0", "skip b#0", "advance-loop l", "finish-loop l". */
function summary(actions: Action[]): string[] {
  return actions.map((a) =>
    a.type === "start" || a.type === "skip" ? `${a.type} ${nodeKey(a.task.nodeId, a.task.iteration)}` : `${a.type} ${a.loop.loopId}`,
  );
}

describe("decide", () => {
  describe("sequence", () => {
    test("starts only the first pending task", () => {
      const d = decide(plan(wf(task("a"), task("b"), task("c"))), states(), NOW);
      expect(d.outcome).toBe("running");
      expect(summary(d.actions)).toEqual(["start a#0"]);
    });

    test("starts nothing new while the current task is running", () => {
      const d = decide(plan(wf(task("a"), task("b"))), states({ "a#0": "running" }), NOW);
      expect(d.outcome).toBe("running");
      expect(d.actions).toEqual([]);
      expect(d.wakeAtMs).toBeUndefined();
    });

    test("starts the next task once the previous one finished", () => {
      const d = decide(plan(wf(task("a"), task("b"), task("c"))), states({ "a#0": "finished" }), NOW);
      expect(summary(d.actions)).toEqual(["start b#0"]);
    });

    test("starts the next task once the previous one was skipped", () => {
      const d = decide(plan(wf(task("a"), task("b"))), states({ "a#0": "skipped" }), NOW);
      expect(summary(d.actions)).toEqual(["start b#0"]);
    });

    test("a nested Sequence finishes before the following sibling starts", () => {
      const p = plan(wf(seq(task("a"), task("b")), task("c")));
      expect(summary(decide(p, states({ "a#0": "finished" }), NOW).actions)).toEqual(["start b#0"]);
      expect(summary(decide(p, states({ "a#0": "finished", "b#0": "finished" }), NOW).actions)).toEqual(["start c#0"]);
    });

    test("a pending or cancelled task is started again", () => {
      expect(summary(decide(plan(wf(task("a"))), states({ "a#0": "pending" }), NOW).actions)).toEqual(["start a#0"]);
      expect(summary(decide(plan(wf(task("a"))), states({ "a#0": "cancelled" }), NOW).actions)).toEqual(["start a#0"]);
    });
  });

  describe("parallel", () => {
    test("starts every child when uncapped", () => {
      const d = decide(plan(wf(par(undefined, task("a"), task("b"), task("c")))), states(), NOW);
      expect(summary(d.actions)).toEqual(["start a#0", "start b#0", "start c#0"]);
    });

    test("starts at most maxConcurrency children", () => {
      const d = decide(plan(wf(par(2, task("a"), task("b"), task("c")))), states(), NOW);
      expect(summary(d.actions)).toEqual(["start a#0", "start b#0"]);
    });

    test("counts running children against maxConcurrency", () => {
      const p = plan(wf(par(2, task("a"), task("b"), task("c"), task("d"))));
      expect(summary(decide(p, states({ "a#0": "running" }), NOW).actions)).toEqual(["start b#0"]);
      expect(decide(p, states({ "a#0": "running", "b#0": "running" }), NOW).actions).toEqual([]);
      expect(summary(decide(p, states({ "a#0": "finished", "b#0": "running" }), NOW).actions)).toEqual(["start c#0"]);
    });

    test("the global maxConcurrency caps starts across the whole run, counting running tasks", () => {
      const p = plan(wf(par(undefined, task("a"), task("b"), task("c"), task("d"))));
      expect(summary(decide(p, states(), NOW, 3).actions)).toEqual(["start a#0", "start b#0", "start c#0"]);
      expect(summary(decide(p, states({ "a#0": "running", "b#0": "running" }), NOW, 3).actions)).toEqual(["start c#0"]);
    });

    test("the tighter of the group cap and the global cap wins", () => {
      const p = plan(wf(par(3, task("a"), task("b"), task("c"), task("d"))));
      expect(summary(decide(p, states(), NOW, 2).actions)).toEqual(["start a#0", "start b#0"]);
      expect(summary(decide(p, states(), NOW, 10).actions)).toEqual(["start a#0", "start b#0", "start c#0"]);
    });

    test("a Sequence inside a Parallel runs its own children in order", () => {
      const p = plan(wf(par(undefined, seq(task("a1"), task("a2")), seq(task("b1"), task("b2")))));
      expect(summary(decide(p, states(), NOW).actions)).toEqual(["start a1#0", "start b1#0"]);
      expect(summary(decide(p, states({ "a1#0": "finished", "b1#0": "running" }), NOW).actions)).toEqual(["start a2#0"]);
    });

    test("a task after a Parallel waits for every child of the group", () => {
      const p = plan(wf(par(undefined, task("a"), task("b")), task("join")));
      expect(decide(p, states({ "a#0": "finished", "b#0": "running" }), NOW).actions).toEqual([]);
      expect(summary(decide(p, states({ "a#0": "finished", "b#0": "skipped" }), NOW).actions)).toEqual(["start join#0"]);
    });

    test("the cap of an inner Parallel counts only that group's running tasks", () => {
      const p = plan(wf(par(undefined, par(1, task("a"), task("b")), par(1, task("c"), task("d")))));
      expect(summary(decide(p, states({ "a#0": "running" }), NOW).actions)).toEqual(["start c#0"]);
    });
  });

  describe("skipIf", () => {
    test("a skipped task yields a skip action instead of a start", () => {
      const d = decide(plan(wf(task("a", { skipIf: true }), task("b"))), states(), NOW);
      expect(summary(d.actions)).toEqual(["skip a#0"]);
      expect(d.outcome).toBe("running");
    });

    test("skip actions do not use up concurrency", () => {
      const d = decide(plan(wf(par(1, task("a", { skipIf: true }), task("b"), task("c")))), states(), NOW);
      expect(summary(d.actions)).toEqual(["skip a#0", "start b#0"]);
    });
  });

  describe("failure", () => {
    test("a failed task makes the outcome failed and names the task", () => {
      const d = decide(plan(wf(task("a"), task("b"))), states({ "a#0": "failed" }), NOW);
      expect(d.outcome).toBe("failed");
      expect(d.actions).toEqual([]);
      expect(d.failure?.kind).toBe("task");
      expect(d.failure?.kind === "task" && d.failure.task.nodeId).toBe("a");
    });

    test("a failed task inside a Parallel fails the run and starts nothing else", () => {
      const d = decide(plan(wf(par(undefined, task("a"), task("b"), task("c")))), states({ "b#0": "failed", "a#0": "running" }), NOW);
      expect(d.outcome).toBe("failed");
      expect(d.actions).toEqual([]);
      expect(d.failure?.kind === "task" && d.failure.task.nodeId).toBe("b");
    });

    test("a failed task with continueOnFail counts as done and the sequence moves on", () => {
      const d = decide(plan(wf(task("a", { continueOnFail: true }), task("b"))), states({ "a#0": "failed" }), NOW);
      expect(d.outcome).toBe("running");
      expect(summary(d.actions)).toEqual(["start b#0"]);
    });

    test("a run whose only failure has continueOnFail finishes", () => {
      const d = decide(plan(wf(task("a", { continueOnFail: true }), task("b"))), states({ "a#0": "failed", "b#0": "finished" }), NOW);
      expect(d.outcome).toBe("finished");
      expect(d.failure).toBeUndefined();
    });
  });

  describe("retry backoff", () => {
    test("a task whose retryAtMs is in the future is not started and sets wakeAtMs", () => {
      const d = decide(plan(wf(task("a"))), states({ "a#0": { state: "pending", retryAtMs: NOW + 500 } }), NOW);
      expect(d.outcome).toBe("running");
      expect(d.actions).toEqual([]);
      expect(d.wakeAtMs).toBe(NOW + 500);
    });

    test("a task whose retryAtMs has arrived is started", () => {
      const d = decide(plan(wf(task("a"))), states({ "a#0": { state: "pending", retryAtMs: NOW } }), NOW);
      expect(summary(d.actions)).toEqual(["start a#0"]);
      expect(d.wakeAtMs).toBeUndefined();
    });

    test("wakeAtMs is the earliest retry time among waiting tasks", () => {
      const d = decide(
        plan(wf(par(undefined, task("a"), task("b"), task("c")))),
        states({ "a#0": { state: "pending", retryAtMs: NOW + 900 }, "b#0": { state: "pending", retryAtMs: NOW + 200 } }),
        NOW,
      );
      expect(summary(d.actions)).toEqual(["start c#0"]);
      expect(d.wakeAtMs).toBe(NOW + 200);
    });
  });

  describe("dependsOn", () => {
    test("a task waits for the task it depends on to finish", () => {
      const p = plan(wf(par(undefined, task("a"), task("b", { dependsOn: ["a"] }))));
      expect(summary(decide(p, states(), NOW).actions)).toEqual(["start a#0"]);
      expect(decide(p, states({ "a#0": "running" }), NOW).actions).toEqual([]);
      expect(summary(decide(p, states({ "a#0": "finished" }), NOW).actions)).toEqual(["start b#0"]);
    });

    test("a skipped dependency counts as met", () => {
      const p = plan(wf(par(undefined, task("a"), task("b", { dependsOn: ["a"] }))));
      expect(summary(decide(p, states({ "a#0": "skipped" }), NOW).actions)).toEqual(["start b#0"]);
    });

    test("a task waits for every task it depends on", () => {
      const p = plan(wf(par(undefined, task("a"), task("b"), task("c", { dependsOn: ["a", "b"] }))));
      expect(decide(p, states({ "a#0": "finished", "b#0": "running" }), NOW).actions).toEqual([]);
      expect(summary(decide(p, states({ "a#0": "finished", "b#0": "finished" }), NOW).actions)).toEqual(["start c#0"]);
    });

    test("a dependency that failed with continueOnFail counts as done, as it does for the sequence", () => {
      const p = plan(wf(par(undefined, task("a", { continueOnFail: true }), task("b", { dependsOn: ["a"] }))));
      const d = decide(p, states({ "a#0": "failed" }), NOW);
      expect(summary(d.actions)).toEqual(["start b#0"]);
    });

    test("inside a loop, a task waits for its dependency in the same iteration, not an earlier one", () => {
      const p = plan(wf(loop("l", { until: false }, par(undefined, task("a"), task("b", { dependsOn: ["a"] })))), {
        l: { iteration: 1, done: false },
      });
      const d = decide(p, states({ "a#0": "finished", "b#0": "finished", "a#1": "running" }), NOW);
      expect(summary(d.actions)).toEqual([]);
    });
  });

  describe("loop", () => {
    const body = () => [task("write"), task("review")];

    test("starts the children of the current iteration", () => {
      const p = plan(wf(loop("revise", { until: false }, ...body())), { revise: { iteration: 2, done: false } });
      expect(summary(decide(p, states({ "write#1": "finished", "review#1": "finished" }), NOW).actions)).toEqual(["start write#2"]);
    });

    test("advances when the iteration is done, until is false and iterations remain", () => {
      const p = plan(wf(loop("revise", { until: false, maxIterations: 3 }, ...body())), { revise: { iteration: 1, done: false } });
      const d = decide(p, states({ "write#1": "finished", "review#1": "finished" }), NOW);
      expect(d.outcome).toBe("running");
      expect(summary(d.actions)).toEqual(["advance-loop revise"]);
      const action = d.actions[0]!;
      expect(action.type === "advance-loop" && action.loop.iteration).toBe(1);
    });

    test("finishes when until is true at an iteration boundary", () => {
      const p = plan(wf(loop("revise", { until: true }, ...body()), task("after")), { revise: { iteration: 1, done: false } });
      const d = decide(p, states({ "write#0": "finished", "review#0": "finished" }), NOW);
      expect(summary(d.actions)).toEqual(["finish-loop revise"]);
    });

    test("finishes when until becomes true after the last child of the iteration", () => {
      const p = plan(wf(loop("revise", { until: true }, ...body())), { revise: { iteration: 1, done: false } });
      const d = decide(p, states({ "write#1": "finished", "review#1": "finished" }), NOW);
      expect(summary(d.actions)).toEqual(["finish-loop revise"]);
    });

    test("keeps running a half-done iteration when until turns true", () => {
      const p = plan(wf(loop("revise", { until: true }, ...body())), { revise: { iteration: 1, done: false } });
      const d = decide(p, states({ "write#1": "finished" }), NOW);
      expect(summary(d.actions)).toEqual(["start review#1"]);
    });

    test("a loop whose until is true before it ever ran finishes without running its children", () => {
      const p = plan(wf(loop("revise", { until: true }, ...body())));
      expect(summary(decide(p, states(), NOW).actions)).toEqual(["finish-loop revise"]);
    });

    test("reaching maxIterations with onMaxReached fail fails the run with a loop-max failure", () => {
      const p = plan(wf(loop("revise", { until: false, maxIterations: 3, onMaxReached: "fail" }, ...body())), {
        revise: { iteration: 2, done: false },
      });
      const d = decide(p, states({ "write#2": "finished", "review#2": "finished" }), NOW);
      expect(d.outcome).toBe("failed");
      expect(d.actions).toEqual([]);
      expect(d.failure?.kind).toBe("loop-max");
      expect(d.failure?.kind === "loop-max" && d.failure.loop.loopId).toBe("revise");
    });

    test("reaching maxIterations with onMaxReached return-last finishes the loop", () => {
      const p = plan(wf(loop("revise", { until: false, maxIterations: 3 }, ...body())), { revise: { iteration: 2, done: false } });
      const d = decide(p, states({ "write#2": "finished", "review#2": "finished" }), NOW);
      expect(d.outcome).toBe("running");
      expect(summary(d.actions)).toEqual(["finish-loop revise"]);
    });

    test("a done loop schedules none of its children and the next sibling starts", () => {
      const p = plan(wf(loop("revise", { until: false }, ...body()), task("after")), { revise: { iteration: 2, done: true } });
      const d = decide(p, states(), NOW);
      expect(summary(d.actions)).toEqual(["start after#0"]);
    });

    test("tasks after a running loop wait for it", () => {
      const p = plan(wf(loop("revise", { until: false }, ...body()), task("after")));
      expect(summary(decide(p, states({ "write#0": "finished" }), NOW).actions)).toEqual(["start review#0"]);
    });

    test("a failed child inside a loop fails the run", () => {
      const p = plan(wf(loop("revise", { until: false }, ...body())));
      const d = decide(p, states({ "write#0": "failed" }), NOW);
      expect(d.outcome).toBe("failed");
      expect(d.failure?.kind === "task" && d.failure.task.nodeId).toBe("write");
    });
  });

  describe("outcome", () => {
    test("is finished when every task finished or was skipped", () => {
      const p = plan(wf(task("a"), par(2, task("b"), task("c", { skipIf: true }))));
      const d = decide(p, states({ "a#0": "finished", "b#0": "finished", "c#0": "skipped" }), NOW);
      expect(d).toEqual({ actions: [], outcome: "finished" });
    });

    test("is finished for an empty workflow", () => {
      expect(decide(plan(wf()), states(), NOW)).toEqual({ actions: [], outcome: "finished" });
    });

    test("is finished when the only loop is done", () => {
      const p = plan(wf(loop("l", { until: false }, task("a"))), { l: { iteration: 0, done: true } });
      expect(decide(p, states(), NOW).outcome).toBe("finished");
    });

    test("is running while a task is still running", () => {
      expect(decide(plan(wf(task("a"))), states({ "a#0": "running" }), NOW).outcome).toBe("running");
    });

    test("is the same for the same inputs", () => {
      const p = plan(wf(par(2, task("a"), task("b"), task("c"))));
      const s = states({ "a#0": { state: "pending", retryAtMs: NOW + 10 } });
      expect(summary(decide(p, s, NOW).actions)).toEqual(summary(decide(p, s, NOW).actions));
    });
  });
});
