/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { approvalDecisionSchema, createSmithers } from "smithers-workflows";
import { rejection } from "../helpers.ts";
import { testWorkflow } from "smithers-workflows/testing";

function deployWorkflow() {
  const { Workflow, Task, Approval, smithers, outputs } = createSmithers({
    build: z.object({ n: z.number() }),
    approval: approvalDecisionSchema,
    deploy: z.object({ shipped: z.boolean() }),
  });
  return smithers(() => (
    <Workflow name="deploy">
      <Task id="build" output={outputs.build}>
        {{ n: 1 }}
      </Task>
      <Approval id="ship-it" output={outputs.approval} request={{ title: "Ship it?" }} />
      <Task id="deploy" output={outputs.deploy}>
        {{ shipped: true }}
      </Task>
    </Workflow>
  ));
}

describe("WorkflowTest: approvals, signals and human tasks", () => {
  test("approve records the decision and resume finishes the run past the gate", async () => {
    await using t = await testWorkflow(deployWorkflow());
    const run = await t.run();
    expect(run.status).toBe("waiting-approval");
    expect(await t.approve(run.runId, "ship-it", { by: "ada", note: "looks good" })).toMatchObject({ nodeId: "ship-it", approved: true });
    expect(await t.resume(run.runId)).toMatchObject({ status: "finished" });
    expect(t.output(run.runId, "ship-it")).toMatchObject({ approved: true, decidedBy: "ada", note: "looks good" });
    expect(t.output(run.runId, "deploy")).toEqual({ shipped: true });
  });

  test("deny fails the run with APPROVAL_DENIED and the deploy task never runs", async () => {
    await using t = await testWorkflow(deployWorkflow());
    const run = await t.run();
    await t.deny(run.runId, "ship-it", { by: "bob", note: "not today" });
    const denied = await t.resume(run.runId);
    expect(denied.status).toBe("failed");
    expect(denied.error?.code).toBe("APPROVAL_DENIED");
    expect(t.output(run.runId, "deploy")).toBeUndefined();
  });

  test("a decided run is also resumed by the next advance of the clock, as the daemon would", async () => {
    await using t = await testWorkflow(deployWorkflow());
    const run = await t.run();
    await t.approve(run.runId, "ship-it");
    await t.clock.advance(1);
    expect(t.output(run.runId, "deploy")).toEqual({ shipped: true });
    expect((await t.runs()).map((r) => r.status)).toEqual(["finished"]);
  });

  test("signal delivers a payload to the <Signal> node waiting for it; resume mounts its children with it", async () => {
    const { Workflow, Signal, Task, smithers, outputs } = createSmithers({
      feedback: z.object({ rating: z.number() }),
      summary: z.object({ text: z.string() }),
    });
    const workflow = smithers(() => (
      <Workflow name="feedback">
        <Signal id="user-feedback" schema={outputs.feedback}>
          {(f) => (
            <Task id="summarize" output={outputs.summary}>
              {{ text: `rated ${f.rating}` }}
            </Task>
          )}
        </Signal>
      </Workflow>
    ));
    await using t = await testWorkflow(workflow);
    const run = await t.run();
    expect(run.status).toBe("waiting-event");
    expect(await t.signal(run.runId, "user-feedback", { rating: 5 })).toMatchObject({ waitingNodes: [{ nodeId: "user-feedback", iteration: 0 }] });
    expect(await t.resume(run.runId)).toMatchObject({ status: "finished", output: { text: "rated 5" } });
    expect(t.outputs(run.runId)).toEqual({ "user-feedback": { rating: 5 }, summarize: { text: "rated 5" } });
  });

  test("answer fills the <HumanTask> with the value; a node that asks nothing is HUMAN_REQUEST_NOT_FOUND", async () => {
    const { Workflow, HumanTask, smithers, outputs } = createSmithers({ review: z.object({ approved: z.boolean(), comments: z.string() }) });
    const workflow = smithers(() => (
      <Workflow name="review">
        <HumanTask id="review" output={outputs.review} prompt="Review the PR" />
      </Workflow>
    ));
    await using t = await testWorkflow(workflow);
    const run = await t.run();
    expect(run.status).toBe("waiting-approval");
    expect(await rejection(t.answer(run.runId, "nope", {}))).toMatchObject({ code: "HUMAN_REQUEST_NOT_FOUND" });
    expect(await t.answer(run.runId, "review", { approved: true, comments: "ship it" }, { by: "ada" })).toEqual({ requestId: `${run.runId}:review:0:1` });
    expect(await t.resume(run.runId)).toMatchObject({ status: "finished" });
    expect(t.output(run.runId, "review")).toEqual({ approved: true, comments: "ship it" });
  });

  test("a signal wait's timeout fires on the clock: onTimeout skip skips the node", async () => {
    const { Workflow, WaitForEvent, smithers, outputs } = createSmithers({ deployed: z.object({ version: z.string() }) });
    const workflow = smithers(() => (
      <Workflow name="deploy-wait">
        <WaitForEvent id="wait" event="deployed" output={outputs.deployed} timeoutMs={86_400_000} onTimeout="skip" />
      </Workflow>
    ));
    await using t = await testWorkflow(workflow);
    const run = await t.run();
    expect(run.status).toBe("waiting-event");
    await t.clock.advance(86_400_000);
    expect(await t.resume(run.runId)).toMatchObject({ status: "finished" });
    expect(t.events(run.runId).map((e) => e.type)).toContain("WaitTimedOut");
  });
});
