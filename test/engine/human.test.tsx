/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { answerHuman, cancelHuman, createSmithers, humanInbox, runWorkflow, type SmithersErrorCode } from "../../src/index.ts";
import { supervise } from "../../src/engine/index.ts";
import { rejection, query, tempDbPath } from "../helpers.ts";

// The refinement has no JSON Schema form: the answer command cannot see it, the engine can.
const review = z.object({ approved: z.boolean(), comments: z.string() }).refine((r) => r.approved || r.comments.length > 0, "a rejection needs comments");

function kit(dbPath: string) {
  return createSmithers({ review, after: z.object({ ok: z.boolean() }) }, { dbPath });
}

describe("<HumanTask>", () => {
  test("the run waits with a pending request; the answer becomes the node's row on resume", async () => {
    const dbPath = tempDbPath();
    const { Workflow, HumanTask, Task, smithers, outputs, smithersDb } = kit(dbPath);
    const wf = smithers((ctx) => (
      <Workflow name="review-flow">
        <HumanTask id="review" output={outputs.review} prompt="Review the PR" />
        <Task id="after" output={outputs.after}>
          {() => ({ ok: ctx.output<{ approved: boolean }>(outputs.review, { nodeId: "review" }).approved })}
        </Task>
      </Workflow>
    ));
    expect((await runWorkflow(wf, { input: {}, runId: "r" })).status).toBe("waiting-approval");
    const inbox = await humanInbox(smithersDb);
    expect(inbox.map((i) => [i.requestId, i.workflowName, i.runStatus, i.nodeId, i.prompt, i.expired])).toEqual([
      ["r:review:0:1", "review-flow", "waiting-approval", "review", "Review the PR", false],
    ]);
    expect(inbox[0]!.schema).toMatchObject({ type: "object", required: ["approved", "comments"] });
    await answerHuman(smithersDb, { requestId: "r:review:0:1", data: { approved: true, comments: "" }, by: "ada" });
    expect(await runWorkflow(wf, { runId: "r", resume: true })).toMatchObject({ status: "finished", output: { ok: true } });
    expect(await query(dbPath, "SELECT approved, comments FROM review")).toEqual([{ approved: 1, comments: "" }]);
    expect(await query(dbPath, "SELECT status, answered_by FROM _smithers_human_requests")).toEqual([{ status: "answered", answered_by: "ada" }]);
    expect(await humanInbox(smithersDb)).toEqual([]);
  });

  test("an answer the schema refuses at the engine asks again (a new request), up to maxAttempts, then HUMAN_ANSWER_INVALID", async () => {
    const dbPath = tempDbPath();
    const { Workflow, HumanTask, smithers, outputs, smithersDb } = kit(dbPath);
    const wf = smithers(() => (
      <Workflow name="strict">
        <HumanTask id="review" output={outputs.review} prompt="Review" maxAttempts={2} />
      </Workflow>
    ));
    await runWorkflow(wf, { input: {}, runId: "r" });
    await answerHuman(smithersDb, { requestId: "r:review:0:1", data: { approved: false, comments: "" } });
    expect((await runWorkflow(wf, { runId: "r", resume: true })).status).toBe("waiting-approval");
    const again = await humanInbox(smithersDb);
    expect(again.map((i) => i.requestId)).toEqual(["r:review:0:2"]);
    expect(again[0]!.prompt).toContain("a rejection needs comments");
    await answerHuman(smithersDb, { requestId: "r:review:0:2", data: { approved: false, comments: "" } });
    const result = await runWorkflow(wf, { runId: "r", resume: true });
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("HUMAN_ANSWER_INVALID");
    expect(await query(dbPath, "SELECT count(*) AS n FROM review")).toEqual([{ n: 0 }]);
    expect((await query(dbPath, "SELECT type, payload_json FROM _smithers_events WHERE type = 'HumanAnswered' ORDER BY seq")).length).toBe(2);
  });

  test("bad answers are refused with their code and change nothing: unknown id, invalid data, answered twice, cancelled", async () => {
    const dbPath = tempDbPath();
    const { Workflow, HumanTask, smithers, outputs, smithersDb } = kit(dbPath);
    const wf = smithers(() => (
      <Workflow name="bad">
        <HumanTask id="review" output={outputs.review} prompt="Review" continueOnFail />
      </Workflow>
    ));
    await runWorkflow(wf, { input: {}, runId: "r" });
    expect((await rejection(answerHuman(smithersDb, { requestId: "nope", data: {} }))).code).toBe("HUMAN_REQUEST_NOT_FOUND");
    const invalid = await rejection(answerHuman(smithersDb, { requestId: "r:review:0:1", data: { approved: "yes" } }));
    expect(invalid.code).toBe("HUMAN_ANSWER_INVALID");
    expect(invalid.message).toContain("comments");
    expect(await query(dbPath, "SELECT status, response_json FROM _smithers_human_requests")).toEqual([{ status: "pending", response_json: null }]);
    await cancelHuman(smithersDb, { requestId: "r:review:0:1" });
    expect((await rejection(answerHuman(smithersDb, { requestId: "r:review:0:1", data: { approved: true, comments: "" } }))).code).toBe("HUMAN_REQUEST_CLOSED");
    // Cancelled: the node fails with HUMAN_TASK_CANCELLED; continueOnFail lets the run finish.
    expect((await runWorkflow(wf, { runId: "r", resume: true })).status).toBe("finished");
    expect(await query(dbPath, "SELECT state FROM _smithers_nodes")).toEqual([{ state: "failed" }]);
    expect(
      (await query<{ p: string }>(dbPath, "SELECT payload_json AS p FROM _smithers_events WHERE type = 'NodeFailed'")).map((r) => JSON.parse(r.p).error.code),
    ).toEqual(["HUMAN_TASK_CANCELLED"]);
  });

  test("a timed-out request is listed expired, cannot be answered, and the daemon fails the node with HUMAN_TASK_TIMEOUT", async () => {
    const dbPath = tempDbPath();
    const { Workflow, HumanTask, smithers, outputs, smithersDb } = kit(dbPath);
    const wf = smithers(() => (
      <Workflow name="slow">
        <HumanTask id="review" output={outputs.review} prompt="Review" timeoutMs={400} />
      </Workflow>
    ));
    // 400 ms: long enough for the run to stop and wait first on a loaded machine, short for the test.
    expect((await runWorkflow(wf, { input: {}, runId: "r", waitInPlaceMs: 0 })).status).toBe("waiting-approval");
    await Bun.sleep(450);
    expect((await humanInbox(smithersDb)).map((i) => i.expired)).toEqual([true]);
    expect((await rejection(answerHuman(smithersDb, { requestId: "r:review:0:1", data: { approved: true, comments: "" } }))).code).toBe("HUMAN_REQUEST_CLOSED");
    const outcomes = await supervise({ db: smithersDb, resolveWorkflow: () => wf });
    expect(outcomes.map((o) => (o.action === "resumed" ? [o.runId, o.result.status, o.result.error?.code] : o.action))).toEqual([
      ["r", "failed", "HUMAN_TASK_TIMEOUT"],
    ]);
    expect(await query(dbPath, "SELECT status FROM _smithers_human_requests")).toEqual([{ status: "expired" }]);
  });

  test("inside a loop each iteration asks on its own request id", async () => {
    const dbPath = tempDbPath();
    const { Workflow, HumanTask, Loop, smithers, outputs, smithersDb } = kit(dbPath);
    const wf = smithers((ctx) => (
      <Workflow name="rounds">
        <Loop id="rounds" until={ctx.iterationCount(outputs.review, "review") >= 2} maxIterations={3}>
          <HumanTask id="review" output={outputs.review} prompt={`Round ${ctx.iteration}`} />
        </Loop>
      </Workflow>
    ));
    await runWorkflow(wf, { input: {}, runId: "r" });
    await answerHuman(smithersDb, { requestId: "r:review:0:1", data: { approved: true, comments: "a" } });
    await runWorkflow(wf, { runId: "r", resume: true });
    expect((await humanInbox(smithersDb)).map((i) => [i.requestId, i.prompt])).toEqual([["r:review:1:1", "Round 1"]]);
    await answerHuman(smithersDb, { requestId: "r:review:1:1", data: { approved: true, comments: "b" } });
    expect((await runWorkflow(wf, { runId: "r", resume: true })).status).toBe("finished");
    expect(await query(dbPath, "SELECT iteration, comments FROM review ORDER BY iteration")).toEqual([
      { iteration: 0, comments: "a" },
      { iteration: 1, comments: "b" },
    ]);
  });

  test("props it does not take are refused; a prompt is required", async () => {
    const { Workflow, HumanTask, smithers, outputs } = kit(tempDbPath());
    const cases: [object, SmithersErrorCode][] = [
      [{ meta: { a: 1 } }, "UNSUPPORTED_PROP"],
      [{ retries: 2 }, "UNSUPPORTED_PROP"],
      [{ prompt: "" }, "INVALID_WORKFLOW"],
      [{ maxAttempts: 0 }, "INVALID_WORKFLOW"],
    ];
    for (const [extra, code] of cases) {
      const wf = smithers(() => (
        <Workflow name="x">
          <HumanTask id="h" output={outputs.review} prompt="p" {...(extra as object)} />
        </Workflow>
      ));
      expect((await runWorkflow(wf, { input: {} })).error?.code).toBe(code);
    }
  });
});
