/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { planToXml } from "../../src/codec/plan-xml.ts";
import { ContinueAsNew, continueAsNew, createSmithers, Loop, render, Worktree } from "../../src/index.ts";
import { errorOf } from "../helpers.ts";

const { Workflow, Task, outputs } = createSmithers({ out: z.object({ n: z.number() }) });
const spread = (props: Record<string, unknown>) => props as object;
const t = (id: string) => (
  <Task id={id} output={outputs.out}>
    {{ n: 1 }}
  </Task>
);

describe("<ContinueAsNew>", () => {
  test("renders to a plan node holding its state as JSON gives it back", () => {
    const plan = render(
      <Workflow name="w">
        <ContinueAsNew state={{ at: new Date(0), skip: undefined }} />
      </Workflow>,
    );
    expect(plan.root.children).toEqual([{ kind: "continue-as-new", state: { at: "1970-01-01T00:00:00.000Z" }, stateBytes: 33 }]); // {"at":"1970-01-01T00:00:00.000Z"}
  });

  test("continueAsNew(state) renders like <ContinueAsNew state>", () => {
    const a = render(<Workflow name="w">{continueAsNew({ page: 1 })}</Workflow>);
    const b = render(
      <Workflow name="w">
        <ContinueAsNew state={{ page: 1 }} />
      </Workflow>,
    );
    expect(a).toEqual(b);
  });

  test("a prop it does not take fails with UNSUPPORTED_PROP listing `state`", () => {
    const error = errorOf(() => render(<Workflow name="w">{<ContinueAsNew {...spread({ carry: { a: 1 } })} />}</Workflow>));
    expect(error.code).toBe("UNSUPPORTED_PROP");
    expect(error.message).toContain('has no prop "carry"; it takes state');
  });
});

describe("<Loop continueAsNewEvery>", () => {
  test("is taken (no longer a prop of smithers-orchestrator this version refuses) and lands on the plan's loop", () => {
    const plan = render(
      <Workflow name="w">
        <Loop id="l" until={false} continueAsNewEvery={4}>
          {t("a")}
        </Loop>
      </Workflow>,
    );
    expect(plan.loops[0]?.continueAsNewEvery).toBe(4);
  });

  test("anything but a positive whole number fails the render with INVALID_WORKFLOW", () => {
    for (const every of [0, -1, 2.5, "3"]) {
      const error = errorOf(() =>
        render(
          <Workflow name="w">
            <Loop id="l" until={false} {...spread({ continueAsNewEvery: every })}>
              {t("a")}
            </Loop>
          </Workflow>,
        ),
      );
      expect(error.code).toBe("INVALID_WORKFLOW");
    }
  });
});

describe("<Worktree>", () => {
  test("gives the tasks inside it (only those) its spec, and shows in the frame as a <worktree> element", () => {
    const plan = render(
      <Workflow name="w">
        {t("outside")}
        <Worktree id="wt" path="/tmp/wt-a" branch="feature-a">
          {t("inside")}
        </Worktree>
      </Workflow>,
    );
    const spec = { id: "wt", path: "/tmp/wt-a", branch: "feature-a", baseBranch: undefined };
    expect(plan.tasks.map((task) => [task.nodeId, task.worktree])).toEqual([
      ["outside", undefined],
      ["inside", spec],
    ]);
    const { root } = planToXml(plan, { tableOf: () => "out" });
    expect(root.children[1]).toMatchObject({ tag: "worktree", props: { id: "wt", path: "/tmp/wt-a", branch: "feature-a" } });
  });

  test("with skipIf it and its tasks are absent from the plan", () => {
    const plan = render(
      <Workflow name="w">
        <Worktree path="/tmp/x" skipIf>
          {t("a")}
        </Worktree>
      </Workflow>,
    );
    expect(plan.tasks).toEqual([]);
  });

  test("a prop it does not take fails with UNSUPPORTED_PROP", () => {
    const error = errorOf(() => render(<Workflow name="w">{<Worktree path="/tmp/x" {...spread({ keep: true })} />}</Workflow>));
    expect([error.code, error.details?.prop]).toEqual(["UNSUPPORTED_PROP", "keep"]);
  });
});

describe("<ContinueAsNew> state that JSON would change", () => {
  test("is INVALID_CONTINUATION_STATE naming where: a Set, a Map, NaN, a function", () => {
    const cases: [unknown, string][] = [
      [{ seen: new Set(["a"]) }, "state.seen (a Set)"],
      [{ tally: new Map([["k", 1]]) }, "state.tally (a Map)"],
      [{ scores: [1, Number.NaN] }, "state.scores[1] (NaN)"],
      [{ cb: () => 1 }, "state.cb (a function)"],
    ];
    for (const [state, path] of cases) {
      const error = errorOf(() =>
        render(
          <Workflow name="w">
            <ContinueAsNew state={state} />
          </Workflow>,
        ),
      );
      expect([error.code, error.details?.path]).toEqual(["INVALID_CONTINUATION_STATE", path]);
    }
  });
});
