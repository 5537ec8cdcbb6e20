/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { jsx } from "../../src/jsx/jsx-runtime.ts";
import { Branch, Loop, nodeKey, Parallel, render, Sequence, Task, Workflow, type Plan, type PlanTask, type SmithersNode } from "../../src/jsx/index.ts";
import { errorOf } from "../helpers.ts";

const out = z.object({ n: z.number() });
const ids = (plan: Plan) => plan.tasks.map((t) => t.nodeId);

/** The plan with every function replaced by a marker, so two renders compare by shape. */
function withoutFunctions(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value, (_k, v) => (typeof v === "function" ? "[fn]" : v)));
}

function Pair(props: { prefix: string }) {
  return (
    <>
      <Task id={`${props.prefix}-1`} output={out}>
        {{ n: 1 }}
      </Task>
      <Task id={`${props.prefix}-2`} output={out}>
        {{ n: 2 }}
      </Task>
    </>
  );
}

function Nothing(): SmithersNode {
  return null;
}

describe("render", () => {
  test("expands function components in place, passing their props", () => {
    const plan = render(
      <Workflow name="w">
        <Task id="first" output={out}>
          {{ n: 0 }}
        </Task>
        <Pair prefix="p" />
        <Task id="last" output={out}>
          {{ n: 3 }}
        </Task>
      </Workflow>,
    );
    expect(ids(plan)).toEqual(["first", "p-1", "p-2", "last"]);
  });

  test("a component returning null renders nothing", () => {
    const plan = render(
      <Workflow name="w">
        <Nothing />
        <Task id="a" output={out}>
          {{ n: 1 }}
        </Task>
      </Workflow>,
    );
    expect(ids(plan)).toEqual(["a"]);
  });

  test("a function component may return the Workflow root", () => {
    const App = () => (
      <Workflow name="from-component">
        <Task id="a" output={out}>
          {{ n: 1 }}
        </Task>
      </Workflow>
    );
    const plan = render(<App />);
    expect(plan.workflowName).toBe("from-component");
    expect(ids(plan)).toEqual(["a"]);
  });

  test("renders arrays of keyed tasks in array order", () => {
    const items = ["x", "y", "z"];
    const plan = render(
      <Workflow name="w">
        <Parallel>
          {items.map((item, i) => (
            <Task key={item} id={`task-${item}`} output={out}>
              {{ n: i }}
            </Task>
          ))}
        </Parallel>
      </Workflow>,
    );
    expect(ids(plan)).toEqual(["task-x", "task-y", "task-z"]);
    expect(plan.tasks.map((t) => t.staticValue)).toEqual([{ n: 0 }, { n: 1 }, { n: 2 }]);
  });

  test("flattens nested arrays and fragments", () => {
    const fragment = (
      <>
        {[
          <Task key="b" id="b" output={out}>
            {{ n: 2 }}
          </Task>,
        ]}
      </>
    );
    const plan = render(
      <Workflow name="w">
        {[
          [
            <Task key="a" id="a" output={out}>
              {{ n: 1 }}
            </Task>,
          ],
          fragment,
        ]}
      </Workflow>,
    );
    expect(ids(plan)).toEqual(["a", "b"]);
  });

  test("conditional children mount only when their condition holds", () => {
    const tree = (flag: boolean) => (
      <Workflow name="w">
        {flag && (
          <Task id="maybe" output={out}>
            {{ n: 1 }}
          </Task>
        )}
        {flag ? (
          <Task id="then" output={out}>
            {{ n: 2 }}
          </Task>
        ) : (
          <Task id="else" output={out}>
            {{ n: 3 }}
          </Task>
        )}
      </Workflow>
    );
    expect(ids(render(tree(true)))).toEqual(["maybe", "then"]);
    expect(ids(render(tree(false)))).toEqual(["else"]);
  });

  test("null, undefined, true and false children are ignored", () => {
    const plan = render(
      <Workflow name="w">
        {null}
        {undefined}
        {true}
        {false}
        <Task id="a" output={out}>
          {{ n: 1 }}
        </Task>
        <Sequence>
          {null}
          {false}
        </Sequence>
      </Workflow>,
    );
    expect(ids(plan)).toEqual(["a"]);
    expect(plan.root.children.map((c) => c.kind)).toEqual(["task", "sequence"]);
  });

  test("whitespace-only text between elements is ignored", () => {
    const plan = render(
      jsx(Workflow, {
        name: "w",
        children: [
          "  ",
          <Task id="a" output={out}>
            {{ n: 1 }}
          </Task>,
          "\n",
        ],
      }),
    );
    expect(ids(plan)).toEqual(["a"]);
  });

  test("text outside a Task throws INVALID_WORKFLOW", () => {
    expect(
      errorOf(() =>
        render(
          <Workflow name="w">
            stray words
            <Task id="a" output={out}>
              {{ n: 1 }}
            </Task>
          </Workflow>,
        ),
      ).code,
    ).toBe("INVALID_WORKFLOW");
  });

  test("the root must be a Workflow element", () => {
    expect(
      errorOf(() =>
        render(
          <Task id="a" output={out}>
            {{ n: 1 }}
          </Task>,
        ),
      ).code,
    ).toBe("INVALID_WORKFLOW");
    expect(errorOf(() => render(null)).code).toBe("INVALID_WORKFLOW");
    expect(errorOf(() => render(<Sequence />)).code).toBe("INVALID_WORKFLOW");
  });

  test("the root must be a single Workflow", () => {
    expect(
      errorOf(() =>
        render(
          <>
            <Workflow name="a" />
            <Workflow name="b" />
          </>,
        ),
      ).code,
    ).toBe("INVALID_WORKFLOW");
  });

  test("a Workflow without a name throws INVALID_WORKFLOW", () => {
    expect(errorOf(() => render(jsx(Workflow, {}))).code).toBe("INVALID_WORKFLOW");
    expect(errorOf(() => render(<Workflow name="" />)).code).toBe("INVALID_WORKFLOW");
  });

  test("a Workflow below the root throws INVALID_WORKFLOW", () => {
    expect(
      errorOf(() =>
        render(
          <Workflow name="outer">
            <Workflow name="inner" />
          </Workflow>,
        ),
      ).code,
    ).toBe("INVALID_WORKFLOW");
  });

  test("an unknown host element throws INVALID_WORKFLOW", () => {
    expect(errorOf(() => render(<Workflow name="w">{jsx("smithers:nope", {})}</Workflow>)).code).toBe("INVALID_WORKFLOW");
  });

  test("an empty Workflow renders an empty plan", () => {
    const plan = render(<Workflow name="empty" />);
    expect(plan).toEqual({ workflowName: "empty", root: { kind: "sequence", maxConcurrency: undefined, children: [] }, tasks: [], loops: [] });
  });

  test("is pure: the same tree and loop state give deep-equal plans", () => {
    const build = () => (
      <Workflow name="w">
        <Task id="a" output={out}>
          {() => ({ n: 1 })}
        </Task>
        <Parallel maxConcurrency={2}>
          <Pair prefix="p" />
          <Branch
            if={true}
            then={
              <Task id="b" output={out}>
                {{ n: 2 }}
              </Task>
            }
          />
        </Parallel>
        <Loop id="l" until={false} maxIterations={3}>
          <Task id="c" output={out}>
            {() => ({ n: 3 })}
          </Task>
        </Loop>
      </Workflow>
    );
    const state = new Map([["l", { iteration: 1, done: false }]]);
    const one = render(build(), state);
    const two = render(build(), state);
    expect(withoutFunctions(one)).toEqual(withoutFunctions(two));
    const same = build();
    expect(withoutFunctions(render(same, state))).toEqual(withoutFunctions(render(same, state)));
  });

  test("does not modify the loop state map it is given", () => {
    const state = new Map([["l", { iteration: 1, done: false }]]);
    render(
      <Workflow name="w">
        <Loop id="l" until={true}>
          <Task id="c" output={out}>
            {{ n: 3 }}
          </Task>
        </Loop>
        <Loop id="other" until={false}>
          <Task id="d" output={out}>
            {{ n: 3 }}
          </Task>
        </Loop>
      </Workflow>,
      state,
    );
    expect([...state.entries()]).toEqual([["l", { iteration: 1, done: false }]]);
  });

  test("plan.tasks lists every mounted task in document order across groups and loops", () => {
    const plan = render(
      <Workflow name="w">
        <Task id="a" output={out}>
          {{ n: 1 }}
        </Task>
        <Parallel>
          <Sequence>
            <Task id="b" output={out}>
              {{ n: 1 }}
            </Task>
          </Sequence>
          <Task id="c" output={out}>
            {{ n: 1 }}
          </Task>
        </Parallel>
        <Loop id="l" until={false}>
          <Task id="d" output={out}>
            {{ n: 1 }}
          </Task>
        </Loop>
        <Task id="e" output={out}>
          {{ n: 1 }}
        </Task>
      </Workflow>,
    );
    expect(ids(plan)).toEqual(["a", "b", "c", "d", "e"]);
    expect(plan.loops.map((l) => l.loopId)).toEqual(["l"]);
  });

  test("the same task id may appear again after a render with different conditions", () => {
    const a = render(
      <Workflow name="w">
        {
          <Task id="x" output={out}>
            {{ n: 1 }}
          </Task>
        }
      </Workflow>,
    );
    const b = render(
      <Workflow name="w">
        {
          <Task id="x" output={out}>
            {{ n: 2 }}
          </Task>
        }
      </Workflow>,
    );
    expect((a.tasks[0] as PlanTask).staticValue).toEqual({ n: 1 });
    expect((b.tasks[0] as PlanTask).staticValue).toEqual({ n: 2 });
  });
});

describe("nodeKey", () => {
  test("joins node id and iteration", () => {
    expect(nodeKey("review", 2)).toBe("review#2");
    expect(nodeKey("a", 0)).toBe("a#0");
  });

  test("distinct (id, iteration) pairs give distinct keys", () => {
    expect(nodeKey("a", 11)).not.toBe(nodeKey("a1", 1));
  });
});
