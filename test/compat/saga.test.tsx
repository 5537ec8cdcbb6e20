/** @jsxImportSource smithers-workflows */
/**
 * <Saga> as smithers-orchestrator documents it: steps run in sequence, each with a compensation;
 * on a failure the compensations run in reverse; onFailure chooses compensate (the default),
 * compensate-and-fail or fail; `<Saga.Step>` / `SagaStep` children are the alternative to
 * `steps`, which wins when both are given.
 */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers, runWorkflow, Saga, SagaStep } from "../../src/index.ts";
import { sql, tempDbPath } from "../helpers.ts";

/** A kit whose tasks record, in `calls`, the order their bodies ran in; `failing` tasks throw. */
function kit(failing: string[] = []) {
  const dbPath = tempDbPath();
  const calls: string[] = [];
  const { Workflow, Task, smithers, outputs } = createSmithers({ change: z.object({ what: z.string() }) }, { dbPath });
  const step = (id: string) => (
    <Task id={id} output={outputs.change} retries={0}>
      {() => {
        calls.push(id);
        if (failing.includes(id)) throw new Error(`${id} broke`);
        return { what: id };
      }}
    </Task>
  );
  const deploySteps = (["create-pr", "deploy-staging", "deploy-prod"] as const).map((id, i) => ({
    id,
    action: step(id),
    compensation: step(["close-pr", "rollback-staging", "rollback-prod"][i]!),
  }));
  return { dbPath, calls, Workflow, smithers, step, deploySteps };
}

describe("<Saga> (smithers-orchestrator docs)", () => {
  test("when a step fails, the completed steps are compensated in reverse order and, by default, the run goes on green", async () => {
    const { dbPath, calls, Workflow, smithers, step, deploySteps } = kit(["deploy-prod"]);
    const wf = smithers(() => (
      <Workflow name="deploy-saga">
        <Saga id="deploy" steps={deploySteps} />
        {step("notify")}
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.status).toBe("finished");
    expect(calls).toEqual(["create-pr", "deploy-staging", "deploy-prod", "rollback-staging", "close-pr", "notify"]);
    // Each compensation is a durable task with its own row and attempt.
    expect(
      sql(dbPath, "SELECT node_id, attempt, state FROM _smithers_attempts WHERE node_id IN ('close-pr', 'rollback-staging', 'rollback-prod') ORDER BY node_id"),
    ).toEqual([
      { node_id: "close-pr", attempt: 1, state: "finished" },
      { node_id: "rollback-staging", attempt: 1, state: "finished" },
    ]);
    expect(sql(dbPath, "SELECT node_id FROM change WHERE node_id IN ('close-pr', 'rollback-staging', 'rollback-prod') ORDER BY node_id")).toEqual([
      { node_id: "close-pr" },
      { node_id: "rollback-staging" },
    ]);
  });

  test('onFailure "compensate-and-fail" undoes the completed steps, then fails with the step\'s error; "fail" undoes nothing', async () => {
    const undone = kit(["deploy-prod"]);
    const compensated = undone.smithers(() => (
      <undone.Workflow name="deploy-saga">
        <Saga id="deploy" onFailure="compensate-and-fail" steps={undone.deploySteps} />
        {undone.step("notify")}
      </undone.Workflow>
    ));
    const first = await runWorkflow(compensated, { input: {} });
    expect([first.status, first.error?.code, first.error?.nodeId]).toEqual(["failed", "TASK_FAILED", "deploy-prod"]);
    expect(undone.calls).toEqual(["create-pr", "deploy-staging", "deploy-prod", "rollback-staging", "close-pr"]);

    const kept = kit(["deploy-prod"]);
    const failing = kept.smithers(() => (
      <kept.Workflow name="deploy-saga">
        <Saga id="deploy" onFailure="fail" steps={kept.deploySteps} />
      </kept.Workflow>
    ));
    const second = await runWorkflow(failing, { input: {} });
    expect([second.status, second.error?.code, second.error?.nodeId]).toEqual(["failed", "TASK_FAILED", "deploy-prod"]);
    expect(kept.calls).toEqual(["create-pr", "deploy-staging", "deploy-prod"]);
  });

  test("<Saga.Step> and SagaStep children make the same saga, and steps= wins when both are given", async () => {
    const { calls, Workflow, smithers, step, deploySteps } = kit(["deploy-staging", "ignored"]);
    const wf = smithers(() => (
      <Workflow name="deploy-saga">
        <Saga id="children">
          <Saga.Step id="pr" compensation={step("close-pr-2")}>
            {step("create-pr-2")}
          </Saga.Step>
          <SagaStep id="staging" compensation={step("rollback-staging-2")}>
            {step("deploy-staging-2")}
          </SagaStep>
          <Saga.Step id="prod" compensation={step("rollback-prod-2")}>
            {step("ignored")}
          </Saga.Step>
        </Saga>
        <Saga id="both" steps={deploySteps}>
          <Saga.Step id="never" compensation={step("never-undone")}>
            {step("never-run")}
          </Saga.Step>
        </Saga>
      </Workflow>
    ));
    expect((await runWorkflow(wf, { input: {} })).status).toBe("finished");
    expect(calls).toEqual(["create-pr-2", "deploy-staging-2", "ignored", "rollback-staging-2", "close-pr-2", "create-pr", "deploy-staging", "close-pr"]);
  });
});
