/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { decodeFrameXml, encodeFrameXml, planToXml } from "../../src/codec/index.ts";
import { Loop, nodeKey, Parallel, render, Task, Workflow } from "../../src/jsx/index.ts";

const out = z.object({ n: z.number() });
const plan = render(
  <Workflow name={'fix "auth" & <tokens>'}>
    <Task id="analyze" output={out} retries={2} label="Analyze & triage">
      {{ n: 1 }}
    </Task>
    <Parallel maxConcurrency={2}>
      <Task id="a" output={out} skipIf>
        {() => ({ n: 2 })}
      </Task>
      <Task id="b" output={out} dependsOn={["a"]} continueOnFail>
        {{ n: 3 }}
      </Task>
    </Parallel>
    <Loop id="revise" until={false} maxIterations={3}>
      <Task id="write" output={out}>
        {{ n: 4 }}
      </Task>
    </Loop>
  </Workflow>,
  new Map([["revise", { iteration: 1, done: false }]]),
);

describe("planToXml", () => {
  test("renders the plan as workflow/sequence/parallel/loop/task elements with typed props", () => {
    const { root } = planToXml(plan, { tableOf: () => "out" });
    expect(root.children[0]).toEqual({
      tag: "task",
      props: { id: "analyze", iteration: 0, state: "pending", output: "out", mode: "static", label: "Analyze & triage", retries: 2 },
      children: [],
    });
    expect(root.children[1]!.props).toEqual({ maxConcurrency: 2 });
    expect(root.children[1]!.children[0]!.props.skip).toBe(true);
    expect(root.children[1]!.children[1]!.props).toMatchObject({ continueOnFail: true, dependsOn: ["a"] });
    expect(root.children[2]!.props).toEqual({ id: "revise", iteration: 1, maxIterations: 3, onMaxReached: "return-last" });
  });

  test("writes the XML with strings as-is and numbers, flags and lists in the = form", () => {
    expect(encodeFrameXml(planToXml(plan, { tableOf: () => "out" }).root)).toBe(
      '<workflow name="fix &quot;auth&quot; &amp; &lt;tokens&gt;">' +
        '<task id="analyze" iteration="=0" state="pending" output="out" mode="static" label="Analyze &amp; triage" retries="=2"/>' +
        '<parallel maxConcurrency="=2"><task id="a" iteration="=0" state="pending" output="out" mode="compute" skip="=true"/>' +
        '<task id="b" iteration="=0" state="pending" output="out" mode="static" continueOnFail="=true" dependsOn="=[&quot;a&quot;]"/></parallel>' +
        '<loop id="revise" iteration="=1" maxIterations="=3" onMaxReached="return-last"><task id="write" iteration="=1" state="pending" output="out" mode="static"/></loop>' +
        "</workflow>",
    );
  });

  test("writes each task's state from stateOf, pending when it returns undefined", () => {
    const states = new Map([
      ["a", "running"],
      ["write", "finished"],
    ]);
    const { root } = planToXml(plan, { tableOf: () => "out", stateOf: (task) => states.get(task.nodeId) });
    expect(root.children[0]!.props.state).toBe("pending");
    expect(root.children[1]!.children[0]!.props.state).toBe("running");
    expect(root.children[2]!.children[0]!.props.state).toBe("finished");
  });

  test("maps every task's node key to the path of its element", () => {
    const { root, taskPaths } = planToXml(plan, { tableOf: () => "out" });
    expect([...taskPaths]).toEqual([
      [nodeKey("analyze", 0), [0]],
      [nodeKey("a", 0), [1, 0]],
      [nodeKey("b", 0), [1, 1]],
      [nodeKey("write", 1), [2, 0]],
    ]);
    for (const [key, path] of taskPaths) {
      const el = path.reduce((node, i) => node.children[i]!, root);
      expect(nodeKey(el.props.id as string, el.props.iteration as number)).toBe(key);
    }
  });

  test("round-trips through XML exactly", () => {
    const { root } = planToXml(plan, { tableOf: (t) => `table_${t.nodeId}` });
    expect(decodeFrameXml(encodeFrameXml(root))).toEqual(root);
  });
});
