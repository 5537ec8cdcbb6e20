/** @jsxImportSource smithers-workflows */
/** The examples of docs/guides/testing.md, as they appear there. */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { z } from "zod";
import { createSmithers, scriptedAgent, Timer, type Agent } from "smithers-workflows";
import { recordAgent, replayAgent, testWorkflow } from "smithers-workflows/testing";
import gatedDeploy from "../../examples/gated-deploy.tsx";
import hello from "../../examples/hello.tsx";
import signalDeploy from "../../examples/signal-deploy.tsx";
import { tempDir } from "../helpers.ts";

describe("docs/guides/testing.md", () => {
  test("greets by name", async () => {
    await using t = await testWorkflow(hello);
    const run = await t.run({ name: "Ada" });
    expect(run.status).toBe("finished");
    expect(t.output(run.runId, "greet")).toEqual({ message: "Hello, Ada!" });
  });

  test("deploys once approved", async () => {
    await using t = await testWorkflow(gatedDeploy);
    const run = await t.run({ version: "1.2.3" });
    expect(run.status).toBe("waiting-approval");
    expect(t.output(run.runId, "deploy")).toBeUndefined();

    await t.approve(run.runId, "ship-it", { by: "ada", note: "ship it" });
    const done = await t.resume(run.runId);
    expect(done.status).toBe("finished");
    expect(t.output(run.runId, "deploy")).toEqual({ url: "https://prod.example.com", approvedBy: "ada" });
  });

  test("does not deploy when denied", async () => {
    await using t = await testWorkflow(gatedDeploy);
    const run = await t.run({ version: "1.2.3" });
    await t.deny(run.runId, "ship-it", { by: "bob" });
    const done = await t.resume(run.runId);
    expect(done.error?.code).toBe("APPROVAL_DENIED");
  });

  test("reports a deploy confirmed by a signal and a person", async () => {
    await using t = await testWorkflow(signalDeploy);
    const run = await t.run({ deployId: "d-7" });
    expect(run.status).toBe("waiting-event");

    await t.signal(run.runId, "deploy.completed", { status: "ok", url: "https://prod.example.com" }, { correlationId: "d-7" });
    expect((await t.resume(run.runId)).status).toBe("waiting-approval"); // the human task asks now

    await t.answer(run.runId, "smoke-test", { passed: true, notes: "login works" });
    await t.resume(run.runId);
    expect(t.output(run.runId, "report")).toEqual({ summary: "d-7 ok at https://prod.example.com; smoke test passed: login works" });
  });

  test("fails when the deploy system stays silent for an hour", async () => {
    await using t = await testWorkflow(signalDeploy);
    const run = await t.run({ deployId: "d-7" });
    await t.clock.advance(60 * 60_000); // the wait's timeout passes; the run is resumed and fails
    const done = await t.resume(run.runId);
    expect(done.error?.code).toBe("SIGNAL_TIMEOUT");
  });

  const { Workflow, Task, smithers, outputs } = createSmithers({ note: z.object({ text: z.string() }) });
  let calls = 0;
  const reminder = smithers(() => (
    <Workflow name="reminder">
      <Timer id="wait-a-day" duration="1d" />
      <Task id="remind" output={outputs.note} retryPolicy={{ backoff: "fixed", initialDelayMs: 10 * 60_000, maxDelayMs: 10 * 60_000 }}>
        {() => {
          calls++;
          if (calls === 1) throw new Error("mail server down");
          return { text: "Time to review the report" };
        }}
      </Task>
    </Workflow>
  ));

  test("reminds a day later, retrying a failed send after 10 minutes", async () => {
    await using t = await testWorkflow(reminder);
    const run = await t.run();
    expect(run.status).toBe("waiting-timer");

    await t.clock.advance(24 * 60 * 60_000); // the timer fires; the first send fails
    expect(await t.resume(run.runId)).toMatchObject({ status: "running" }); // in its 10-minute backoff

    await t.clock.advance(10 * 60_000); // the retry runs
    expect((await t.resume(run.runId)).status).toBe("finished");
    expect(t.output(run.runId, "remind")).toEqual({ text: "Time to review the report" });
  });

  test("replays a recorded review", async () => {
    const dir = tempDir();
    const transcript = join(dir, "transcripts", "review.json");
    // In a real suite: `process.env.RECORD ? recordAgent(new ClaudeCodeAgent(), transcript) : replayAgent(transcript)`.
    const real = scriptedAgent([{ verdict: "approve" }], { id: "reviewer" });
    const review = (agent: Agent) => {
      const { Workflow, Task, smithers, outputs } = createSmithers({ review: z.object({ verdict: z.string() }) });
      return smithers(() => (
        <Workflow name="review">
          <Task id="review" output={outputs.review} agent={agent}>
            Review the change and reply with a verdict.
          </Task>
        </Workflow>
      ));
    };
    {
      await using t = await testWorkflow(review(recordAgent(real, transcript)));
      await t.run();
    }
    await using t = await testWorkflow(review(replayAgent(transcript)));
    const run = await t.run();
    expect(t.output(run.runId, "review")).toEqual({ verdict: "approve" });
  });
});
