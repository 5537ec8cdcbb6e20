import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { decide, DecideMemo, type Action, type NodeStatus } from "../../src/engine/schedule/scheduler.ts";
import type { NodeState } from "../../src/engine/core/states.ts";
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

/** Actions as short strings: "start a#0", "retry a#0", "skip b#0", "advance-loop l", "wait 1500", "finish-run". */
function summary(actions: Action[]): string[] {
  // biome-ignore lint/suspicious/useIterableCallbackReturn: the switch covers every Action type (tsc's noImplicitReturns checks it)
  return actions.map((a) => {
    switch (a.type) {
      case "start":
      case "retry":
      case "skip":
        return `${a.type} ${nodeKey(a.task.nodeId, a.task.iteration)}`;
      case "advance-loop":
      case "finish-loop":
        return `${a.type} ${a.loop.loopId}`;
      case "suspend":
        return `suspend ${a.status}`;
      case "fire-timer":
      case "expire-wait":
      case "cancel-wait":
      case "wait-slot":
        return `${a.type} ${nodeKey(a.task.nodeId, a.task.iteration)}`;
      case "wait-rate":
        return `wait-rate ${nodeKey(a.task.nodeId, a.task.iteration)} ${a.untilMs}`;
      case "wait":
        return a.untilMs === undefined ? "wait" : `wait ${a.untilMs}`;
      case "finish-run":
        return "finish-run";
      case "fail-run":
        return `fail-run ${a.failure.kind}`;
      case "continue-as-new":
        return a.from.kind === "loop" ? `continue-as-new ${a.from.loop.loopId}@${a.from.loop.iteration}` : "continue-as-new";
    }
  });
}

/** The run-level outcome the actions imply. */
function outcome(actions: Action[]): "running" | "finished" | "failed" {
  if (actions.some((a) => a.type === "fail-run")) return "failed";
  return actions.some((a) => a.type === "finish-run") ? "finished" : "running";
}

const failureOf = (actions: Action[]) => actions.flatMap((a) => (a.type === "fail-run" ? [a.failure] : []))[0];
const wakeAt = (actions: Action[]) => actions.flatMap((a) => (a.type === "wait" ? [a.untilMs] : []))[0];
/** The actions that change something (not wait / finish-run / fail-run). */
const progress = (actions: Action[]) => actions.filter((a) => a.type !== "wait" && a.type !== "finish-run" && a.type !== "fail-run");

describe("decide", () => {
  describe("sequence", () => {
    test("starts only the first pending task", () => {
      const d = decide(plan(wf(task("a"), task("b"), task("c"))), states(), NOW);
      expect(outcome(d)).toBe("running");
      expect(summary(progress(d))).toEqual(["start a#0"]);
    });

    test("starts nothing new while the current task is running", () => {
      const d = decide(plan(wf(task("a"), task("b"))), states({ "a#0": "running" }), NOW);
      expect(outcome(d)).toBe("running");
      expect(progress(d)).toEqual([]);
      expect(wakeAt(d)).toBeUndefined();
    });

    test("starts the next task once the previous one finished", () => {
      const d = decide(plan(wf(task("a"), task("b"), task("c"))), states({ "a#0": "finished" }), NOW);
      expect(summary(progress(d))).toEqual(["start b#0"]);
    });

    test("starts the next task once the previous one was skipped", () => {
      const d = decide(plan(wf(task("a"), task("b"))), states({ "a#0": "skipped" }), NOW);
      expect(summary(progress(d))).toEqual(["start b#0"]);
    });

    test("a nested Sequence finishes before the following sibling starts", () => {
      const p = plan(wf(seq(task("a"), task("b")), task("c")));
      expect(summary(progress(decide(p, states({ "a#0": "finished" }), NOW)))).toEqual(["start b#0"]);
      expect(summary(progress(decide(p, states({ "a#0": "finished", "b#0": "finished" }), NOW)))).toEqual(["start c#0"]);
    });

    test("a pending or cancelled task is started again", () => {
      expect(summary(progress(decide(plan(wf(task("a"))), states({ "a#0": "pending" }), NOW)))).toEqual(["start a#0"]);
      expect(summary(progress(decide(plan(wf(task("a"))), states({ "a#0": "cancelled" }), NOW)))).toEqual(["start a#0"]);
    });
  });

  describe("parallel", () => {
    test("starts every child when uncapped", () => {
      const d = decide(plan(wf(par(undefined, task("a"), task("b"), task("c")))), states(), NOW);
      expect(summary(progress(d))).toEqual(["start a#0", "start b#0", "start c#0"]);
    });

    test("starts at most maxConcurrency children", () => {
      const d = decide(plan(wf(par(2, task("a"), task("b"), task("c")))), states(), NOW);
      expect(summary(progress(d))).toEqual(["start a#0", "start b#0"]);
    });

    test("counts running children against maxConcurrency", () => {
      const p = plan(wf(par(2, task("a"), task("b"), task("c"), task("d"))));
      expect(summary(progress(decide(p, states({ "a#0": "running" }), NOW)))).toEqual(["start b#0"]);
      expect(progress(decide(p, states({ "a#0": "running", "b#0": "running" }), NOW))).toEqual([]);
      expect(summary(progress(decide(p, states({ "a#0": "finished", "b#0": "running" }), NOW)))).toEqual(["start c#0"]);
    });

    test("the global maxConcurrency caps starts across the whole run, counting running tasks", () => {
      const p = plan(wf(par(undefined, task("a"), task("b"), task("c"), task("d"))));
      expect(summary(progress(decide(p, states(), NOW, 3)))).toEqual(["start a#0", "start b#0", "start c#0"]);
      expect(summary(progress(decide(p, states({ "a#0": "running", "b#0": "running" }), NOW, 3)))).toEqual(["start c#0"]);
    });

    test("the tighter of the group cap and the global cap wins", () => {
      const p = plan(wf(par(3, task("a"), task("b"), task("c"), task("d"))));
      expect(summary(progress(decide(p, states(), NOW, 2)))).toEqual(["start a#0", "start b#0"]);
      expect(summary(progress(decide(p, states(), NOW, 10)))).toEqual(["start a#0", "start b#0", "start c#0"]);
    });

    test("a Sequence inside a Parallel runs its own children in order", () => {
      const p = plan(wf(par(undefined, seq(task("a1"), task("a2")), seq(task("b1"), task("b2")))));
      expect(summary(progress(decide(p, states(), NOW)))).toEqual(["start a1#0", "start b1#0"]);
      expect(summary(progress(decide(p, states({ "a1#0": "finished", "b1#0": "running" }), NOW)))).toEqual(["start a2#0"]);
    });

    test("a task after a Parallel waits for every child of the group", () => {
      const p = plan(wf(par(undefined, task("a"), task("b")), task("join")));
      expect(progress(decide(p, states({ "a#0": "finished", "b#0": "running" }), NOW))).toEqual([]);
      expect(summary(progress(decide(p, states({ "a#0": "finished", "b#0": "skipped" }), NOW)))).toEqual(["start join#0"]);
    });

    test("the cap of an inner Parallel counts only that group's running tasks", () => {
      const p = plan(wf(par(undefined, par(1, task("a"), task("b")), par(1, task("c"), task("d")))));
      expect(summary(progress(decide(p, states({ "a#0": "running" }), NOW)))).toEqual(["start c#0"]);
    });
  });

  describe("skipIf", () => {
    test("a skipped task yields a skip action instead of a start", () => {
      const d = decide(plan(wf(task("a", { skipIf: true }), task("b"))), states(), NOW);
      expect(summary(progress(d))).toEqual(["skip a#0"]);
      expect(outcome(d)).toBe("running");
    });

    test("skip actions do not use up concurrency", () => {
      const d = decide(plan(wf(par(1, task("a", { skipIf: true }), task("b"), task("c")))), states(), NOW);
      expect(summary(progress(d))).toEqual(["skip a#0", "start b#0"]);
    });
  });

  describe("failure", () => {
    test("a failed task makes the outcome failed and names the task", () => {
      const d = decide(plan(wf(task("a"), task("b"))), states({ "a#0": "failed" }), NOW);
      expect(outcome(d)).toBe("failed");
      expect(progress(d)).toEqual([]);
      expect(failureOf(d)?.kind).toBe("task");
      expect(failureOf(d)?.kind === "task" && (failureOf(d) as { task: { nodeId: string } }).task.nodeId).toBe("a");
    });

    test("a failed task inside a Parallel fails the run and starts nothing else", () => {
      const d = decide(plan(wf(par(undefined, task("a"), task("b"), task("c")))), states({ "b#0": "failed", "a#0": "running" }), NOW);
      expect(outcome(d)).toBe("failed");
      expect(progress(d)).toEqual([]);
      expect(failureOf(d)?.kind === "task" && (failureOf(d) as { task: { nodeId: string } }).task.nodeId).toBe("b");
    });

    test("a failed task with continueOnFail counts as done and the sequence moves on", () => {
      const d = decide(plan(wf(task("a", { continueOnFail: true }), task("b"))), states({ "a#0": "failed" }), NOW);
      expect(outcome(d)).toBe("running");
      expect(summary(progress(d))).toEqual(["start b#0"]);
    });

    test("a run whose only failure has continueOnFail finishes", () => {
      const d = decide(plan(wf(task("a", { continueOnFail: true }), task("b"))), states({ "a#0": "failed", "b#0": "finished" }), NOW);
      expect(outcome(d)).toBe("finished");
      expect(failureOf(d)).toBeUndefined();
    });
  });

  describe("retry backoff", () => {
    test("a task whose retryAtMs is in the future is not started and sets wakeAtMs", () => {
      const d = decide(plan(wf(task("a"))), states({ "a#0": { state: "pending", retryAtMs: NOW + 500 } }), NOW);
      expect(outcome(d)).toBe("running");
      expect(progress(d)).toEqual([]);
      expect(wakeAt(d)).toBe(NOW + 500);
    });

    test("a task whose retryAtMs has arrived is retried", () => {
      const d = decide(plan(wf(task("a"))), states({ "a#0": { state: "pending", retryAtMs: NOW } }), NOW);
      expect(summary(d)).toEqual(["retry a#0"]);
      expect(wakeAt(d)).toBeUndefined();
    });

    test("other ready tasks start while siblings wait out their backoff", () => {
      const d = decide(
        plan(wf(par(undefined, task("a"), task("b"), task("c")))),
        states({ "a#0": { state: "pending", retryAtMs: NOW + 900 }, "b#0": { state: "pending", retryAtMs: NOW + 200 } }),
        NOW,
      );
      expect(summary(d)).toEqual(["start c#0"]);
    });

    test("the wait lasts until the earliest retry time among waiting tasks", () => {
      const d = decide(
        plan(wf(par(undefined, task("a"), task("b"), task("c")))),
        states({ "a#0": { state: "pending", retryAtMs: NOW + 900 }, "b#0": { state: "pending", retryAtMs: NOW + 200 }, "c#0": "running" }),
        NOW,
      );
      expect(summary(d)).toEqual([`wait ${NOW + 200}`]);
    });

    test("a running task with nothing else to do yields a wait with no deadline", () => {
      expect(decide(plan(wf(task("a"), task("b"))), states({ "a#0": "running" }), NOW)).toEqual([{ type: "wait" }]);
    });

    test("a dependsOn that can never be met fails the run as stuck instead of waiting forever", () => {
      const d = decide(plan(wf(par(undefined, task("a", { dependsOn: ["ghost"] })))), states(), NOW);
      expect(summary(d)).toEqual(["fail-run stuck"]);
    });
  });

  describe("dependsOn", () => {
    test("a task waits for the task it depends on to finish", () => {
      const p = plan(wf(par(undefined, task("a"), task("b", { dependsOn: ["a"] }))));
      expect(summary(progress(decide(p, states(), NOW)))).toEqual(["start a#0"]);
      expect(progress(decide(p, states({ "a#0": "running" }), NOW))).toEqual([]);
      expect(summary(progress(decide(p, states({ "a#0": "finished" }), NOW)))).toEqual(["start b#0"]);
    });

    test("given finishedIds, a dependency that is not mounted is met by the set alone, not by scanning states", () => {
      const p = plan(wf(task("b", { dependsOn: ["gone"] })));
      expect(summary(progress(decide(p, states(), NOW, Infinity, undefined, new Set(["gone"]))))).toEqual(["start b#0"]);
      expect(failureOf(decide(p, states({ "gone#0": "finished" }), NOW, Infinity, undefined, new Set()))).toEqual({ kind: "stuck" });
      expect(summary(progress(decide(p, states({ "gone#0": "finished" }), NOW)))).toEqual(["start b#0"]); // without the set: the scan
    });

    test("a skipped dependency counts as met", () => {
      const p = plan(wf(par(undefined, task("a"), task("b", { dependsOn: ["a"] }))));
      expect(summary(progress(decide(p, states({ "a#0": "skipped" }), NOW)))).toEqual(["start b#0"]);
    });

    test("a task waits for every task it depends on", () => {
      const p = plan(wf(par(undefined, task("a"), task("b"), task("c", { dependsOn: ["a", "b"] }))));
      expect(progress(decide(p, states({ "a#0": "finished", "b#0": "running" }), NOW))).toEqual([]);
      expect(summary(progress(decide(p, states({ "a#0": "finished", "b#0": "finished" }), NOW)))).toEqual(["start c#0"]);
    });

    test("a dependency that failed with continueOnFail counts as done, as it does for the sequence", () => {
      const p = plan(wf(par(undefined, task("a", { continueOnFail: true }), task("b", { dependsOn: ["a"] }))));
      const d = decide(p, states({ "a#0": "failed" }), NOW);
      expect(summary(progress(d))).toEqual(["start b#0"]);
    });

    test("inside a loop, a task waits for its dependency in the same iteration, not an earlier one", () => {
      const p = plan(wf(loop("l", { until: false }, par(undefined, task("a"), task("b", { dependsOn: ["a"] })))), {
        l: { iteration: 1, done: false },
      });
      const d = decide(p, states({ "a#0": "finished", "b#0": "finished", "a#1": "running" }), NOW);
      expect(summary(progress(d))).toEqual([]);
    });
  });

  describe("loop", () => {
    const body = () => [task("write"), task("review")];

    test("starts the children of the current iteration", () => {
      const p = plan(wf(loop("revise", { until: false }, ...body())), { revise: { iteration: 2, done: false } });
      expect(summary(progress(decide(p, states({ "write#1": "finished", "review#1": "finished" }), NOW)))).toEqual(["start write#2"]);
    });

    test("advances when the iteration is done, until is false and iterations remain", () => {
      const p = plan(wf(loop("revise", { until: false, maxIterations: 3 }, ...body())), { revise: { iteration: 1, done: false } });
      const d = decide(p, states({ "write#1": "finished", "review#1": "finished" }), NOW);
      expect(outcome(d)).toBe("running");
      expect(summary(progress(d))).toEqual(["advance-loop revise"]);
      const action = d[0]!;
      expect(action.type === "advance-loop" && action.loop.iteration).toBe(1);
    });

    test("finishes when until is true at an iteration boundary", () => {
      const p = plan(wf(loop("revise", { until: true }, ...body()), task("after")), { revise: { iteration: 1, done: false } });
      const d = decide(p, states({ "write#0": "finished", "review#0": "finished" }), NOW);
      expect(summary(progress(d))).toEqual(["finish-loop revise"]);
    });

    test("finishes when until becomes true after the last child of the iteration", () => {
      const p = plan(wf(loop("revise", { until: true }, ...body())), { revise: { iteration: 1, done: false } });
      const d = decide(p, states({ "write#1": "finished", "review#1": "finished" }), NOW);
      expect(summary(progress(d))).toEqual(["finish-loop revise"]);
    });

    test("keeps running a half-done iteration when until turns true", () => {
      const p = plan(wf(loop("revise", { until: true }, ...body())), { revise: { iteration: 1, done: false } });
      const d = decide(p, states({ "write#1": "finished" }), NOW);
      expect(summary(progress(d))).toEqual(["start review#1"]);
    });

    test("a loop whose until is true before it ever ran finishes without running its children", () => {
      const p = plan(wf(loop("revise", { until: true }, ...body())));
      expect(summary(progress(decide(p, states(), NOW)))).toEqual(["finish-loop revise"]);
    });

    test("reaching maxIterations with onMaxReached fail fails the run with a loop-max failure", () => {
      const p = plan(wf(loop("revise", { until: false, maxIterations: 3, onMaxReached: "fail" }, ...body())), {
        revise: { iteration: 2, done: false },
      });
      const d = decide(p, states({ "write#2": "finished", "review#2": "finished" }), NOW);
      expect(outcome(d)).toBe("failed");
      expect(progress(d)).toEqual([]);
      expect(failureOf(d)?.kind).toBe("loop-max");
      expect(failureOf(d)?.kind === "loop-max" && (failureOf(d) as { loop: { loopId: string } }).loop.loopId).toBe("revise");
    });

    test("reaching maxIterations with onMaxReached return-last finishes the loop", () => {
      const p = plan(wf(loop("revise", { until: false, maxIterations: 3 }, ...body())), { revise: { iteration: 2, done: false } });
      const d = decide(p, states({ "write#2": "finished", "review#2": "finished" }), NOW);
      expect(outcome(d)).toBe("running");
      expect(summary(progress(d))).toEqual(["finish-loop revise"]);
    });

    test("a done loop schedules none of its children and the next sibling starts", () => {
      const p = plan(wf(loop("revise", { until: false }, ...body()), task("after")), { revise: { iteration: 2, done: true } });
      const d = decide(p, states(), NOW);
      expect(summary(progress(d))).toEqual(["start after#0"]);
    });

    test("tasks after a running loop wait for it", () => {
      const p = plan(wf(loop("revise", { until: false }, ...body()), task("after")));
      expect(summary(progress(decide(p, states({ "write#0": "finished" }), NOW)))).toEqual(["start review#0"]);
    });

    test("a failed child inside a loop fails the run", () => {
      const p = plan(wf(loop("revise", { until: false }, ...body())));
      const d = decide(p, states({ "write#0": "failed" }), NOW);
      expect(outcome(d)).toBe("failed");
      expect(failureOf(d)?.kind === "task" && (failureOf(d) as { task: { nodeId: string } }).task.nodeId).toBe("write");
    });
  });

  describe("outcome", () => {
    test("is finished when every task finished or was skipped", () => {
      const p = plan(wf(task("a"), par(2, task("b"), task("c", { skipIf: true }))));
      const d = decide(p, states({ "a#0": "finished", "b#0": "finished", "c#0": "skipped" }), NOW);
      expect(d).toEqual([{ type: "finish-run" }]);
    });

    test("is finished for an empty workflow", () => {
      expect(decide(plan(wf()), states(), NOW)).toEqual([{ type: "finish-run" }]);
    });

    test("is finished when the only loop is done", () => {
      const p = plan(wf(loop("l", { until: false }, task("a"))), { l: { iteration: 0, done: true } });
      expect(outcome(decide(p, states(), NOW))).toBe("finished");
    });

    test("is running while a task is still running", () => {
      expect(outcome(decide(plan(wf(task("a"))), states({ "a#0": "running" }), NOW))).toBe("running");
    });

    test("is the same for the same inputs", () => {
      const p = plan(wf(par(2, task("a"), task("b"), task("c"))));
      const s = states({ "a#0": { state: "pending", retryAtMs: NOW + 10 } });
      expect(summary(decide(p, s, NOW))).toEqual(summary(decide(p, s, NOW)));
    });
  });
});

describe("DecideMemo", () => {
  test("carried across steps of one run, it gives the same actions as a fresh walk at every step", () => {
    const p = plan(wf(task("a"), par(2, task("b"), task("c"), task("d")), seq(task("e"), task("f"))));
    const memo = new DecideMemo();
    const s = states();
    for (let step = 0; step < 20; step++) {
      const fresh = decide(p, s, NOW);
      expect(summary(decide(p, s, NOW, Infinity, memo))).toEqual(summary(fresh));
      const started = fresh.flatMap((a) => (a.type === "start" ? [a.task] : []));
      if (started.length === 0) break;
      for (const [key, st] of s) if (st.state === "running") s.set(key, { state: "finished" });
      for (const t of started) s.set(t.key, { state: "running" });
    }
    expect(summary(decide(p, s, NOW, Infinity, memo))).toEqual(["wait"]);
  });

  test("under a run's maxConcurrency and a subtreeConcurrency group, it agrees with a fresh walk and never starts past the limit", () => {
    const sub = (cap: number, ...children: SmithersNode[]) => jsx(Parallel, { subtreeConcurrency: cap, children });
    const wide = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => task(`${prefix}${i}`));
    const shapes = [
      () => wf(sub(3, ...wide(6, "s"))),
      () => wf(par(undefined, sub(2, ...wide(4, "s")), ...wide(5, "p"))),
      () => wf(par(3, seq(task("a"), task("b")), sub(3, ...wide(5, "s")), ...wide(4, "p"))),
    ];
    for (const shape of shapes) {
      for (const max of [1, 2, 3, Infinity]) {
        const p = plan(shape());
        const memo = new DecideMemo();
        const s = states();
        const running: string[] = [];
        for (let step = 0; step < 60; step++) {
          const fresh = decide(p, s, NOW, max);
          expect(summary(decide(p, s, NOW, max, memo))).toEqual(summary(fresh));
          for (const a of fresh) if (a.type === "start") running.push(a.task.key);
          for (const key of running) s.set(key, { state: "running" });
          expect(running.length).toBeLessThanOrEqual(max);
          // One task ends per step, oldest first, so the others stay in flight across steps.
          const done = running.shift();
          if (done === undefined) break;
          s.set(done, { state: "finished" });
        }
        expect(outcome(decide(p, s, NOW, max, memo))).toBe("finished");
      }
    }
  });

  test("skips the finished prefix of a long sequence instead of walking it again", () => {
    const ids = Array.from({ length: 50 }, (_, i) => `t${i}`);
    const p = plan(wf(...ids.map((id) => task(id))));
    const memo = new DecideMemo();
    const s = states(Object.fromEntries(ids.slice(0, 40).map((id) => [`${id}#0`, "finished" as const])));
    expect(summary(decide(p, s, NOW, Infinity, memo))).toEqual(["start t40#0"]);
    // The memo remembers that t0..t39 are done: a state map that forgot them still starts t40.
    expect(summary(decide(p, states(), NOW, Infinity, memo))).toEqual(["start t40#0"]);
  });
});
