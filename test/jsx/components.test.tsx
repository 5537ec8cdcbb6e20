/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { scriptedAgent } from "../../src/agents/index.ts";
import {
  Branch,
  DEFAULT_MAX_ITERATIONS,
  HOST,
  Loop,
  Parallel,
  Ralph,
  render,
  Sequence,
  Task,
  Workflow,
  type PlanGroup,
  type PlanLoop,
  type PlanTask,
} from "../../src/jsx/index.ts";

const out = z.object({ n: z.number() });
const agent = scriptedAgent([{ n: 1 }]);

const ids = (tasks: PlanTask[]) => tasks.map((t) => t.nodeId);

describe("Workflow", () => {
  test("returns a workflow host element carrying its props", () => {
    const el = Workflow({ name: "w" });
    expect(el.type).toBe(HOST.workflow);
    expect(el.props).toEqual({ name: "w" });
  });

  test("its direct children form the root sequence of the plan", () => {
    const plan = render(
      <Workflow name="w">
        <Task id="a" output={out}>
          {{ n: 1 }}
        </Task>
        <Task id="b" output={out}>
          {{ n: 2 }}
        </Task>
      </Workflow>,
    );
    expect(plan.workflowName).toBe("w");
    expect(plan.root.kind).toBe("sequence");
    expect(plan.root.children.map((c) => (c as PlanTask).nodeId)).toEqual(["a", "b"]);
  });
});

describe("Task", () => {
  test("a string child with an agent is an agent task whose prompt is the string", () => {
    const plan = render(
      <Workflow name="w">
        <Task id="a" output={out} agent={agent}>
          {"Analyze the bug"}
        </Task>
      </Workflow>,
    );
    const task = plan.tasks[0]!;
    expect(task.mode).toBe("agent");
    expect(task.prompt).toBe("Analyze the bug");
    expect(task.agent).toBe(agent);
  });

  test("mixed text and interpolated values are joined into one prompt", () => {
    const topic = "caching";
    const count = 3;
    const plan = render(
      <Workflow name="w">
        <Task id="a" output={out} agent={agent}>
          Write {count} notes on {topic}
        </Task>
      </Workflow>,
    );
    expect(plan.tasks[0]!.mode).toBe("agent");
    expect(plan.tasks[0]!.prompt).toBe("Write 3 notes on caching");
  });

  test("a function child is a compute task holding that function", () => {
    const fn = () => ({ n: 1 });
    const plan = render(
      <Workflow name="w">
        <Task id="a" output={out}>
          {fn}
        </Task>
      </Workflow>,
    );
    expect(plan.tasks[0]!.mode).toBe("compute");
    expect(plan.tasks[0]!.compute).toBe(fn);
    expect(plan.tasks[0]!.prompt).toBeUndefined();
  });

  test("a plain object child is a static task holding that value", () => {
    const plan = render(
      <Workflow name="w">
        <Task id="a" output={out}>
          {{ n: 42 }}
        </Task>
      </Workflow>,
    );
    expect(plan.tasks[0]!.mode).toBe("static");
    expect(plan.tasks[0]!.staticValue).toEqual({ n: 42 });
  });

  test("copies retries, timeoutMs, skipIf, continueOnFail, dependsOn, label and meta into the plan", () => {
    const plan = render(
      <Workflow name="w">
        <Task id="a" output={out}>
          {{ n: 1 }}
        </Task>
        <Task id="b" output={out} retries={2} timeoutMs={500} skipIf continueOnFail dependsOn={["a"]} label="Bee" meta={{ owner: "me" }}>
          {{ n: 2 }}
        </Task>
      </Workflow>,
    );
    const b = plan.tasks[1]!;
    expect(b).toMatchObject({
      nodeId: "b",
      iteration: 0,
      loopId: undefined,
      output: out,
      retries: 2,
      timeoutMs: 500,
      skip: true,
      continueOnFail: true,
      dependsOn: ["a"],
      label: "Bee",
      meta: { owner: "me" },
    });
  });

  test("leaves retries and backoff to the engine's defaults; no timeout, not skipped, failing the run, and no dependencies", () => {
    const plan = render(
      <Workflow name="w">
        <Task id="a" output={out}>
          {{ n: 1 }}
        </Task>
      </Workflow>,
    );
    expect(plan.tasks[0]).toMatchObject({
      retries: undefined,
      retryPolicy: undefined,
      maxSchemaRetries: undefined,
      timeoutMs: undefined,
      skip: false,
      continueOnFail: false,
      dependsOn: [],
      label: undefined,
      meta: undefined,
    });
  });

  test("a Task without output throws MISSING_OUTPUT naming the task", () => {
    const el = (
      <Workflow name="w">
        {/* @ts-expect-error output is required */}
        <Task id="lonely">{{ n: 1 }}</Task>
      </Workflow>
    );
    try {
      render(el);
      throw new Error("render did not throw");
    } catch (error) {
      expect((error as { code?: string }).code).toBe("MISSING_OUTPUT");
      expect((error as { nodeId?: string }).nodeId).toBe("lonely");
      expect((error as Error).message).toContain("lonely");
    }
  });

  test("a prompt without an agent throws INVALID_WORKFLOW", () => {
    const el = (
      <Workflow name="w">
        <Task id="a" output={out}>
          {"Do it"}
        </Task>
      </Workflow>
    );
    expect(() => render(el)).toThrow(expect.objectContaining({ code: "INVALID_WORKFLOW", nodeId: "a" }));
  });

  test("a Task without children throws INVALID_WORKFLOW", () => {
    const el = (
      <Workflow name="w">
        {/* @ts-expect-error children are required */}
        <Task id="a" output={out} />
      </Workflow>
    );
    expect(() => render(el)).toThrow(expect.objectContaining({ code: "INVALID_WORKFLOW" }));
  });

  test("a Task with an empty id throws INVALID_WORKFLOW", () => {
    const el = (
      <Workflow name="w">
        <Task id="" output={out}>
          {{ n: 1 }}
        </Task>
      </Workflow>
    );
    expect(() => render(el)).toThrow(expect.objectContaining({ code: "INVALID_WORKFLOW" }));
  });

  test("two Tasks with the same id throw DUPLICATE_ID naming the id", () => {
    const el = (
      <Workflow name="w">
        <Task id="same" output={out}>
          {{ n: 1 }}
        </Task>
        <Parallel>
          <Task id="same" output={out}>
            {{ n: 2 }}
          </Task>
        </Parallel>
      </Workflow>
    );
    expect(() => render(el)).toThrow(expect.objectContaining({ code: "DUPLICATE_ID", nodeId: "same" }));
  });
});

describe("Sequence", () => {
  test("becomes a sequence group holding its children in order", () => {
    const plan = render(
      <Workflow name="w">
        <Sequence>
          <Task id="a" output={out}>
            {{ n: 1 }}
          </Task>
          <Task id="b" output={out}>
            {{ n: 2 }}
          </Task>
        </Sequence>
      </Workflow>,
    );
    const seq = plan.root.children[0] as PlanGroup;
    expect(seq.kind).toBe("sequence");
    expect(seq.maxConcurrency).toBeUndefined();
    expect(seq.children.map((c) => (c as PlanTask).nodeId)).toEqual(["a", "b"]);
  });

  test("with skipIf the whole sequence and its tasks are absent from the plan", () => {
    const plan = render(
      <Workflow name="w">
        <Sequence skipIf>
          <Task id="a" output={out}>
            {{ n: 1 }}
          </Task>
        </Sequence>
        <Task id="b" output={out}>
          {{ n: 2 }}
        </Task>
      </Workflow>,
    );
    expect(ids(plan.tasks)).toEqual(["b"]);
    expect(plan.root.children).toHaveLength(1);
  });
});

describe("Parallel", () => {
  test("becomes a parallel group carrying maxConcurrency", () => {
    const plan = render(
      <Workflow name="w">
        <Parallel maxConcurrency={2}>
          <Task id="a" output={out}>
            {{ n: 1 }}
          </Task>
          <Task id="b" output={out}>
            {{ n: 2 }}
          </Task>
          <Task id="c" output={out}>
            {{ n: 3 }}
          </Task>
        </Parallel>
      </Workflow>,
    );
    const par = plan.root.children[0] as PlanGroup;
    expect(par.kind).toBe("parallel");
    expect(par.maxConcurrency).toBe(2);
    expect(par.children).toHaveLength(3);
  });

  test("without maxConcurrency the group is uncapped", () => {
    const plan = render(
      <Workflow name="w">
        <Parallel>
          <Task id="a" output={out}>
            {{ n: 1 }}
          </Task>
        </Parallel>
      </Workflow>,
    );
    expect((plan.root.children[0] as PlanGroup).maxConcurrency).toBeUndefined();
  });

  test("a fractional maxConcurrency is floored", () => {
    const plan = render(
      <Workflow name="w">
        <Parallel maxConcurrency={2.9}>
          <Task id="a" output={out}>
            {{ n: 1 }}
          </Task>
        </Parallel>
      </Workflow>,
    );
    expect((plan.root.children[0] as PlanGroup).maxConcurrency).toBe(2);
  });

  test("nests sequences inside, keeping each branch's order", () => {
    const plan = render(
      <Workflow name="w">
        <Parallel>
          <Sequence>
            <Task id="a1" output={out}>
              {{ n: 1 }}
            </Task>
            <Task id="a2" output={out}>
              {{ n: 2 }}
            </Task>
          </Sequence>
          <Sequence>
            <Task id="b1" output={out}>
              {{ n: 3 }}
            </Task>
          </Sequence>
        </Parallel>
        <Task id="join" output={out}>
          {{ n: 4 }}
        </Task>
      </Workflow>,
    );
    const par = plan.root.children[0] as PlanGroup;
    expect(par.children.map((c) => c.kind)).toEqual(["sequence", "sequence"]);
    expect((par.children[0] as PlanGroup).children.map((c) => (c as PlanTask).nodeId)).toEqual(["a1", "a2"]);
    expect(ids(plan.tasks)).toEqual(["a1", "a2", "b1", "join"]);
  });

  test("with skipIf the group is absent from the plan", () => {
    const plan = render(
      <Workflow name="w">
        <Parallel skipIf>
          <Task id="a" output={out}>
            {{ n: 1 }}
          </Task>
        </Parallel>
      </Workflow>,
    );
    expect(plan.tasks).toEqual([]);
    expect(plan.root.children).toEqual([]);
  });
});

describe("Branch", () => {
  const tree = (cond: boolean) => (
    <Workflow name="w">
      <Branch
        if={cond}
        then={
          <Task id="yes" output={out}>
            {{ n: 1 }}
          </Task>
        }
        else={
          <Task id="no" output={out}>
            {{ n: 0 }}
          </Task>
        }
      />
    </Workflow>
  );

  test("mounts then when the condition is truthy and leaves else out of the plan", () => {
    expect(ids(render(tree(true)).tasks)).toEqual(["yes"]);
  });

  test("mounts else when the condition is falsy and leaves then out of the plan", () => {
    expect(ids(render(tree(false)).tasks)).toEqual(["no"]);
  });

  test("without else a falsy condition mounts nothing", () => {
    const plan = render(
      <Workflow name="w">
        <Branch
          if={0}
          then={
            <Task id="yes" output={out}>
              {{ n: 1 }}
            </Task>
          }
        />
      </Workflow>,
    );
    expect(plan.tasks).toEqual([]);
  });

  test("both branches may use the same task id because only one is mounted", () => {
    const plan = render(
      <Workflow name="w">
        <Branch
          if={true}
          then={
            <Task id="x" output={out}>
              {{ n: 1 }}
            </Task>
          }
          else={
            <Task id="x" output={out}>
              {{ n: 0 }}
            </Task>
          }
        />
      </Workflow>,
    );
    expect(plan.tasks.map((t) => t.staticValue)).toEqual([{ n: 1 }]);
  });
});

describe("Loop", () => {
  test("defaults to maxIterations 5 and onMaxReached return-last", () => {
    const plan = render(
      <Workflow name="w">
        <Loop id="l" until={false}>
          <Task id="a" output={out}>
            {{ n: 1 }}
          </Task>
        </Loop>
      </Workflow>,
    );
    const loop = plan.loops[0]!;
    expect(DEFAULT_MAX_ITERATIONS).toBe(5);
    expect(loop).toMatchObject({ kind: "loop", loopId: "l", iteration: 0, until: false, done: false, maxIterations: 5, onMaxReached: "return-last" });
  });

  test("carries until, maxIterations and onMaxReached", () => {
    const plan = render(
      <Workflow name="w">
        <Loop id="l" until={1} maxIterations={3} onMaxReached="fail">
          <Task id="a" output={out}>
            {{ n: 1 }}
          </Task>
        </Loop>
      </Workflow>,
    );
    expect(plan.loops[0]).toMatchObject({ until: true, maxIterations: 3, onMaxReached: "fail" });
  });

  test("tasks inside a loop get iteration 0 and the loop id when no state is persisted", () => {
    const plan = render(
      <Workflow name="w">
        <Loop id="revise" until={false}>
          <Task id="a" output={out}>
            {{ n: 1 }}
          </Task>
        </Loop>
        <Task id="after" output={out}>
          {{ n: 2 }}
        </Task>
      </Workflow>,
    );
    expect(plan.tasks.map((t) => [t.nodeId, t.iteration, t.loopId])).toEqual([
      ["a", 0, "revise"],
      ["after", 0, undefined],
    ]);
  });

  test("takes its iteration and done flag from the loop state map", () => {
    const el = (
      <Workflow name="w">
        <Loop id="revise" until={false}>
          <Task id="write" output={out}>
            {{ n: 1 }}
          </Task>
          <Task id="review" output={out}>
            {{ n: 2 }}
          </Task>
        </Loop>
      </Workflow>
    );
    const plan = render(el, new Map([["revise", { iteration: 2, done: false }]]));
    expect(plan.tasks.map((t) => [t.nodeId, t.iteration, t.loopId])).toEqual([
      ["write", 2, "revise"],
      ["review", 2, "revise"],
    ]);
    expect(plan.loops[0]!.iteration).toBe(2);
    expect(render(el, new Map([["revise", { iteration: 4, done: true }]])).loops[0]!.done).toBe(true);
  });

  test("the loop node is placed in the tree with its children", () => {
    const plan = render(
      <Workflow name="w">
        <Loop id="l" until={false}>
          <Parallel maxConcurrency={1}>
            <Task id="a" output={out}>
              {{ n: 1 }}
            </Task>
            <Task id="b" output={out}>
              {{ n: 2 }}
            </Task>
          </Parallel>
        </Loop>
      </Workflow>,
    );
    const loop = plan.root.children[0] as PlanLoop;
    expect(loop.kind).toBe("loop");
    expect(plan.loops[0]).toBe(loop);
    const par = loop.children[0] as PlanGroup;
    expect(par.kind).toBe("parallel");
    expect(par.maxConcurrency).toBe(1);
    expect(par.children.map((c) => (c as PlanTask).loopId)).toEqual(["l", "l"]);
  });

  test("a loop without id gets a stable id derived from its position", () => {
    const el = (
      <Workflow name="w">
        <Loop until={false}>
          <Task id="a" output={out}>
            {{ n: 1 }}
          </Task>
        </Loop>
        <Loop until={false}>
          <Task id="b" output={out}>
            {{ n: 1 }}
          </Task>
        </Loop>
      </Workflow>
    );
    const first = render(el).loops.map((l) => l.loopId);
    expect(first[0]).not.toBe(first[1]);
    expect(render(el).loops.map((l) => l.loopId)).toEqual(first);
    expect(render(el).tasks.map((t) => t.loopId)).toEqual(first);
  });

  test("maxIterations below 1 is raised to 1", () => {
    const plan = render(
      <Workflow name="w">
        <Loop id="l" until={false} maxIterations={0}>
          <Task id="a" output={out}>
            {{ n: 1 }}
          </Task>
        </Loop>
      </Workflow>,
    );
    expect(plan.loops[0]!.maxIterations).toBe(1);
  });

  test("a loop nested in a loop throws INVALID_WORKFLOW", () => {
    const el = (
      <Workflow name="w">
        <Loop id="outer" until={false}>
          <Loop id="inner" until={false}>
            <Task id="a" output={out}>
              {{ n: 1 }}
            </Task>
          </Loop>
        </Loop>
      </Workflow>
    );
    expect(() => render(el)).toThrow(expect.objectContaining({ code: "INVALID_WORKFLOW" }));
  });

  test("two loops with the same id throw DUPLICATE_ID", () => {
    const el = (
      <Workflow name="w">
        <Loop id="l" until={false}>
          <Task id="a" output={out}>
            {{ n: 1 }}
          </Task>
        </Loop>
        <Loop id="l" until={false}>
          <Task id="b" output={out}>
            {{ n: 1 }}
          </Task>
        </Loop>
      </Workflow>
    );
    expect(() => render(el)).toThrow(expect.objectContaining({ code: "DUPLICATE_ID" }));
  });

  test("with skipIf the loop and its tasks are absent from the plan", () => {
    const plan = render(
      <Workflow name="w">
        <Loop id="l" until={false} skipIf>
          <Task id="a" output={out}>
            {{ n: 1 }}
          </Task>
        </Loop>
      </Workflow>,
    );
    expect(plan.loops).toEqual([]);
    expect(plan.tasks).toEqual([]);
  });
});

describe("Ralph", () => {
  test("is the same component as Loop", () => {
    expect(Ralph).toBe(Loop);
    const plan = render(
      <Workflow name="w">
        <Ralph id="r" until={false} maxIterations={2}>
          <Task id="a" output={out}>
            {{ n: 1 }}
          </Task>
        </Ralph>
      </Workflow>,
    );
    expect(plan.loops[0]).toMatchObject({ loopId: "r", maxIterations: 2 });
    expect(plan.tasks[0]!.loopId).toBe("r");
  });
});
