import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { decide, type Action, type NodeStatus } from "../../src/engine/schedule/scheduler.ts";
import type { NodeState } from "../../src/engine/core/states.ts";
import { jsx } from "../../src/jsx/jsx-runtime.ts";
import { ContinueAsNew, Loop, Parallel, render, Task, Workflow, type LoopState, type SmithersNode } from "../../src/jsx/index.ts";

// Built with jsx() calls so this file stays a .ts file; the shapes are the same as JSX.
const out = z.object({ n: z.number() });
const task = (id: string, dependsOn?: string[]) => jsx(Task, { id, output: out, dependsOn, children: { n: 1 } }, id);
const wf = (...children: SmithersNode[]) => jsx(Workflow, { name: "w", children });
const par = (...children: SmithersNode[]) => jsx(Parallel, { children });
const can = (state?: unknown) => jsx(ContinueAsNew, state === undefined ? {} : { state });
const loop = (opts: { until: boolean; maxIterations: number; continueAsNewEvery?: number }, ...children: SmithersNode[]) =>
  jsx(Loop, { id: "l", ...opts, children });

const states = (entries: Record<string, NodeState> = {}) => new Map<string, NodeStatus>(Object.entries(entries).map(([k, v]) => [k, { state: v }]));
const plan = (root: SmithersNode, loops: Record<string, LoopState> = {}) => render(root, new Map(Object.entries(loops)));
const NOW = 1_000;

function summary(actions: Action[]): string[] {
  return actions.map((a) => {
    if (a.type === "start") return `start ${a.task.key}`;
    if (a.type === "continue-as-new")
      return a.from.kind === "loop" ? `continue-as-new loop@${a.from.loop.iteration}` : `continue-as-new ${JSON.stringify(a.from.node.state)}`;
    return a.type;
  });
}

describe("decide with <ContinueAsNew>", () => {
  test("is not reached while what comes before it in its sequence is not done", () => {
    expect(summary(decide(plan(wf(task("a"), can({ page: 2 }), task("b"))), states(), NOW))).toEqual(["start a#0"]);
  });

  test("once reached with nothing running, continues as new with its state, and what follows it never starts", () => {
    const d = decide(plan(wf(task("a"), can({ page: 2 }), task("b"))), states({ "a#0": "finished" }), NOW);
    expect(summary(d)).toEqual(['continue-as-new {"page":2}']);
  });

  test("reached while a task runs, it starts nothing new and waits for that task", () => {
    const p = plan(wf(par(task("slow"), can(), task("other"), task("after", ["slow"]))));
    expect(summary(decide(p, states({ "slow#0": "running" }), NOW))).toEqual(["wait"]);
    expect(summary(decide(p, states({ "slow#0": "finished" }), NOW))).toEqual(["continue-as-new undefined"]);
  });

  test("a failure still fails the run instead of continuing it", () => {
    const d = decide(plan(wf(par(task("a"), can()))), states({ "a#0": "failed" }), NOW);
    expect(summary(d)).toEqual(["fail-run"]);
  });
});

describe("decide with <Loop continueAsNewEvery>", () => {
  test("after every Nth iteration (counted from 0) the loop continues as new instead of advancing", () => {
    const opts = { until: false, maxIterations: 10, continueAsNewEvery: 3 };
    expect(summary(decide(plan(wf(loop(opts, task("t"))), { l: { iteration: 1, done: false } }), states({ "t#1": "finished" }), NOW))).toEqual([
      "advance-loop",
    ]);
    expect(summary(decide(plan(wf(loop(opts, task("t"))), { l: { iteration: 2, done: false } }), states({ "t#2": "finished" }), NOW))).toEqual([
      "continue-as-new loop@2",
    ]);
    expect(summary(decide(plan(wf(loop(opts, task("t"))), { l: { iteration: 5, done: false } }), states({ "t#5": "finished" }), NOW))).toEqual([
      "continue-as-new loop@5",
    ]);
  });

  test("until and maxIterations end the loop as usual at a boundary that would continue", () => {
    const done = { l: { iteration: 2, done: false } };
    const finished = states({ "t#2": "finished" });
    expect(summary(decide(plan(wf(loop({ until: true, maxIterations: 10, continueAsNewEvery: 3 }, task("t"))), done), finished, NOW))).toEqual(["finish-loop"]);
    expect(summary(decide(plan(wf(loop({ until: false, maxIterations: 3, continueAsNewEvery: 3 }, task("t"))), done), finished, NOW))).toEqual(["finish-loop"]);
  });
});
