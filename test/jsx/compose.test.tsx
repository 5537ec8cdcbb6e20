/** @jsxImportSource smithers-workflows */
/** Rendering <TryCatchFinally> and <Saga>: the plan nodes they make and the mistakes they refuse. */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers, render, Saga, SagaStep, TryCatchFinally } from "../../src/index.ts";
import type { PlanSaga, PlanTry } from "../../src/jsx/index.ts";
import { errorOf } from "../helpers.ts";

const { Workflow, Task, outputs } = createSmithers({ out: z.object({ n: z.number() }) });
const spread = (props: Record<string, unknown>) => props as object;
const t = (id: string) => (
  <Task id={id} output={outputs.out}>
    {{ n: 1 }}
  </Task>
);

describe("<TryCatchFinally>", () => {
  test("renders a try node whose block, catch and finally are sequences, in document order in plan.tasks", () => {
    const plan = render(
      <Workflow name="w">
        <TryCatchFinally id="guard" try={t("a")} catch={t("b")} finally={t("c")} catchErrors={["TASK_TIMEOUT"]} />
      </Workflow>,
    );
    const node = plan.root.children[0] as PlanTry;
    expect([node.kind, node.id, node.catchErrors, node.catchFn]).toEqual(["try", "guard", ["TASK_TIMEOUT"], false]);
    expect([node.block, node.catch, node.finally].map((g) => g?.children.map((c) => c.kind === "task" && c.nodeId))).toEqual([["a"], ["b"], ["c"]]);
    expect(plan.tasks.map((task) => task.nodeId)).toEqual(["a", "b", "c"]);
  });

  test("a catch function is not called while nothing failed: the catch is absent from the plan", () => {
    let called = false;
    const plan = render(
      <Workflow name="w">
        <TryCatchFinally
          try={t("a")}
          catch={() => {
            called = true;
            return t("b");
          }}
        />
      </Workflow>,
    );
    const node = plan.root.children[0] as PlanTry;
    expect([node.catch, node.catchFn, called]).toEqual([undefined, true, false]);
  });

  test("skipIf renders nothing", () => {
    expect(render(<Workflow name="w">{<TryCatchFinally skipIf try={t("a")} />}</Workflow>).tasks).toEqual([]);
  });

  test("an unknown prop fails with UNSUPPORTED_PROP; a missing try or a catchErrors that is not a list of codes fails with INVALID_WORKFLOW", () => {
    const unknown = errorOf(() => render(<Workflow name="w">{<TryCatchFinally try={t("a")} {...spread({ onError: t("b") })} />}</Workflow>));
    expect([unknown.code, unknown.details?.prop]).toEqual(["UNSUPPORTED_PROP", "onError"]);
    const missing = errorOf(() => render(<Workflow name="w">{<TryCatchFinally {...spread({ catch: t("b") })} try={undefined as never} />}</Workflow>));
    expect([missing.code, missing.message]).toEqual(["INVALID_WORKFLOW", '<TryCatchFinally id="try"> needs try={<…/>}: the work it guards']);
    const codes = errorOf(() => render(<Workflow name="w">{<TryCatchFinally try={t("a")} catchErrors={"TASK_FAILED" as never} />}</Workflow>));
    expect([codes.code, codes.details?.prop]).toEqual(["INVALID_WORKFLOW", "catchErrors"]);
  });

  test("a task id used in both try and catch is a DUPLICATE_ID", () => {
    expect(errorOf(() => render(<Workflow name="w">{<TryCatchFinally try={t("a")} catch={t("a")} />}</Workflow>)).code).toBe("DUPLICATE_ID");
  });
});

describe("<Saga>", () => {
  test("renders a saga node with each step's action and compensation, from steps= or from <Saga.Step> children", () => {
    const fromSteps = render(
      <Workflow name="w">
        <Saga id="s" onFailure="compensate-and-fail" steps={[{ id: "1", label: "one", action: t("a1"), compensation: t("c1") }]} />
      </Workflow>,
    ).root.children[0] as PlanSaga;
    const fromChildren = render(
      <Workflow name="w">
        <Saga id="s" onFailure="compensate-and-fail">
          <SagaStep id="1" compensation={t("c1")}>
            {t("a1")}
          </SagaStep>
        </Saga>
      </Workflow>,
    ).root.children[0] as PlanSaga;
    const shape = (s: PlanSaga) => [s.id, s.onFailure, s.steps.map((st) => [st.id, st.action.children.length, st.compensation.children.length])];
    expect(shape(fromSteps)).toEqual(["s", "compensate-and-fail", [["1", 1, 1]]]);
    expect(shape(fromChildren)).toEqual(shape(fromSteps));
    expect([fromSteps.steps[0]!.label, fromChildren.steps[0]!.label]).toEqual(["one", undefined]);
  });

  test("unknown props of the saga, a step entry or a <Saga.Step> fail with UNSUPPORTED_PROP", () => {
    const onSaga = errorOf(() => render(<Workflow name="w">{<Saga steps={[]} {...spread({ parallel: true })} />}</Workflow>));
    expect([onSaga.code, onSaga.details?.component, onSaga.details?.prop]).toEqual(["UNSUPPORTED_PROP", "Saga", "parallel"]);
    const onEntry = errorOf(() =>
      render(<Workflow name="w">{<Saga steps={[{ id: "1", action: t("a"), compensation: t("c"), ...spread({ retries: 2 }) } as never]} />}</Workflow>),
    );
    expect([onEntry.code, onEntry.details?.component, onEntry.details?.prop]).toEqual(["UNSUPPORTED_PROP", "Saga step", "retries"]);
    const onStep = errorOf(() =>
      render(
        <Workflow name="w">
          <Saga>
            <Saga.Step id="1" compensation={t("c")} {...spread({ label: "x" })}>
              {t("a")}
            </Saga.Step>
          </Saga>
        </Workflow>,
      ),
    );
    expect([onStep.code, onStep.details?.component, onStep.details?.prop]).toEqual(["UNSUPPORTED_PROP", "Saga.Step", "label"]);
  });

  test("a step without a compensation, two steps with one id, an unknown onFailure or a child that is not a step fail with INVALID_WORKFLOW", () => {
    const cases = [
      <Saga key="1" steps={[{ id: "1", action: t("a") } as never]} />,
      <Saga
        key="2"
        steps={[
          { id: "1", action: t("a"), compensation: t("c") },
          { id: "1", action: t("b"), compensation: t("d") },
        ]}
      />,
      <Saga key="3" steps={[]} onFailure={"retry" as never} />,
      <Saga key="4">{t("a")}</Saga>,
    ];
    const messages = cases.map((saga) => {
      const error = errorOf(() => render(<Workflow name="w">{saga}</Workflow>));
      expect(error.code).toBe("INVALID_WORKFLOW");
      return error.message.replace(/^<Saga id="[^"]*"> /, "");
    });
    expect(messages).toEqual([
      'step "1" needs a compensation (what undoes its action)',
      'has two steps with the id "1"',
      'onFailure must be "compensate", "compensate-and-fail" or "fail", got "retry"',
      "takes only <Saga.Step> children (or steps={[…]})",
    ]);
  });

  test("a <Saga.Step> outside a <Saga> fails with INVALID_WORKFLOW; skipIf renders nothing", () => {
    const outside = errorOf(() =>
      render(
        <Workflow name="w">
          <Saga.Step id="1" compensation={t("c")}>
            {t("a")}
          </Saga.Step>
        </Workflow>,
      ),
    );
    expect([outside.code, outside.message]).toEqual(["INVALID_WORKFLOW", "<Saga.Step> may only appear directly inside a <Saga>"]);
    expect(render(<Workflow name="w">{<Saga skipIf steps={[{ id: "1", action: t("a"), compensation: t("c") }]} />}</Workflow>).tasks).toEqual([]);
  });
});
