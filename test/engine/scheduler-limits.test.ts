import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { decide, type NodeStatus } from "../../src/engine/schedule/scheduler.ts";
import { jsx } from "../../src/jsx/jsx-runtime.ts";
import { nodeKey, Parallel, render, Task, Workflow, type SmithersNode } from "../../src/jsx/index.ts";

const out = z.object({ n: z.number() });
const keyed = (id: string, key = "k") => jsx(Task, { id, output: out, concurrencyKey: key, children: { n: 1 } }, id);
const plain = (id: string) => jsx(Task, { id, output: out, children: { n: 1 } }, id);
const plan = (...children: SmithersNode[]) => render(jsx(Workflow, { name: "w", children: jsx(Parallel, { children }) }));
const NOW = 1_000;

const brief = (actions: ReturnType<typeof decide>) =>
  actions.map((a) =>
    a.type === "wait-rate"
      ? `wait-rate ${nodeKey(a.task.nodeId, a.task.iteration)} ${a.untilMs}`
      : "task" in a
        ? `${a.type} ${nodeKey(a.task.nodeId, a.task.iteration)}`
        : a.type === "suspend"
          ? `suspend ${a.status}${a.untilMs === undefined ? "" : ` ${a.untilMs}`}`
          : a.type,
  );

describe("decide with limits", () => {
  test("without a blocked key, ready tasks under a key start like any other (the engine's claim decides)", () => {
    expect(brief(decide(plan(keyed("a"), keyed("b")), new Map(), NOW))).toEqual(["start a#0", "start b#0"]);
  });

  test("a key known full turns its ready tasks into wait-slot; other tasks still start", () => {
    const actions = decide(plan(keyed("a"), plain("p")), new Map(), NOW, Infinity, undefined, undefined, new Map([["k", Infinity]]));
    expect(brief(actions)).toEqual(["wait-slot a#0", "start p#0"]);
  });

  test("a run with only waiting-slot tasks and nothing running suspends waiting-slot, with no wake time", () => {
    const states = new Map<string, NodeStatus>([["a#0", { state: "waiting-slot" }]]);
    expect(brief(decide(plan(keyed("a")), states, NOW, Infinity, undefined, undefined, new Map([["k", Infinity]])))).toEqual(["suspend waiting-slot"]);
  });

  test("a waiting-slot task starts again once its key is no longer known full", () => {
    const states = new Map<string, NodeStatus>([["a#0", { state: "waiting-slot" }]]);
    expect(brief(decide(plan(keyed("a")), states, NOW))).toEqual(["start a#0"]);
  });

  test("a rate window closed until a time holds the task waiting-rate until then, and the run rests until that time", () => {
    const blocked = new Map([["k", NOW + 60_000]]);
    expect(brief(decide(plan(keyed("a")), new Map(), NOW, Infinity, undefined, undefined, blocked))).toEqual([`wait-rate a#0 ${NOW + 60_000}`]);
    const waiting = new Map<string, NodeStatus>([["a#0", { state: "waiting-rate", wakeAtMs: NOW + 60_000 }]]);
    expect(brief(decide(plan(keyed("a")), waiting, NOW))).toEqual([`suspend waiting-rate ${NOW + 60_000}`]);
    expect(brief(decide(plan(keyed("a")), waiting, NOW + 60_000))).toEqual(["start a#0"]);
  });

  test("a key's limits do not hold a task under another key", () => {
    const actions = decide(plan(keyed("a", "k"), keyed("b", "other")), new Map(), NOW, Infinity, undefined, undefined, new Map([["k", Infinity]]));
    expect(brief(actions)).toEqual(["wait-slot a#0", "start b#0"]);
  });
});
