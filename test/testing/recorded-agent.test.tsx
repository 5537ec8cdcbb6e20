/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { createSmithers } from "smithers-workflows";
import type { Agent } from "smithers-workflows/agents";
import { recordAgent, replayAgent, scriptedAgent, testWorkflow } from "smithers-workflows/testing";
import { rejection, tempDir } from "../helpers.ts";

function reviewWorkflow(agent: Agent) {
  const { Workflow, Task, smithers, outputs } = createSmithers({
    input: z.object({ pr: z.number() }),
    review: z.object({ verdict: z.string() }),
  });
  return smithers((ctx) => (
    <Workflow name="review">
      <Task id="review" output={outputs.review} agent={agent}>
        {`Review pull request #${ctx.input.pr}`}
      </Task>
    </Workflow>
  ));
}

describe("recordAgent and replayAgent", () => {
  test("a recorded run's replies are written to the transcript, and a replay gives the same output without the real agent", async () => {
    const path = join(tempDir(), "transcripts", "review.json");
    const real = scriptedAgent([{ verdict: "approve" }], { id: "reviewer" });
    {
      await using t = await testWorkflow(reviewWorkflow(recordAgent(real, path)));
      const run = await t.run({ pr: 7 });
      expect(t.output(run.runId, "review")).toEqual({ verdict: "approve" });
    }
    const transcript = JSON.parse(readFileSync(path, "utf8"));
    expect(transcript).toMatchObject({ version: 1, agentId: "reviewer", entries: [{ reply: { text: '{"verdict":"approve"}' } }] });
    expect(transcript.entries[0].prompt).toContain("Review pull request #7");

    const replay = replayAgent(path);
    await using t = await testWorkflow(reviewWorkflow(replay));
    const run = await t.run({ pr: 7 });
    expect(run.status).toBe("finished");
    expect(t.output(run.runId, "review")).toEqual({ verdict: "approve" });
    expect(real.calls).toHaveLength(1);
    expect(replay.calls).toHaveLength(1);
  });

  test("a prompt the transcript does not hold fails the task with REPLAY_MISMATCH, not retried", async () => {
    const path = join(tempDir(), "review.json");
    {
      await using t = await testWorkflow(reviewWorkflow(recordAgent(scriptedAgent([{ verdict: "approve" }]), path)));
      await t.run({ pr: 7 });
    }
    await using t = await testWorkflow(reviewWorkflow(replayAgent(path)));
    const run = await t.run({ pr: 8 });
    expect(run.status).toBe("failed");
    expect(run.error?.code).toBe("REPLAY_MISMATCH");
    expect(run.error?.message).toContain("Review pull request #8");
    expect(t.events(run.runId).filter((e) => e.type === "NodeRetrying")).toEqual([]);
  });

  test("a replay called more often than it was recorded fails with REPLAY_EXHAUSTED", async () => {
    const replay = replayAgent({ version: 1, entries: [{ prompt: "hi", reply: { text: "hello" } }] }, { match: "order" });
    expect(await replay.generate({ prompt: "anything" })).toEqual({ text: "hello" });
    expect(await rejection(replay.generate({ prompt: "again" }))).toMatchObject({ code: "REPLAY_EXHAUSTED" });
  });

  test("a recorded error is replayed with its code", async () => {
    const path = join(tempDir(), "errors.json");
    const failing: Agent = {
      id: "down",
      generate: async () => {
        throw new Error("503 from the provider");
      },
    };
    const recorder = recordAgent(failing, path);
    expect(await rejection(recorder.generate({ prompt: "p" }))).toMatchObject({ message: "503 from the provider" });
    expect(await rejection(replayAgent(path).generate({ prompt: "p" }))).toMatchObject({ code: "AGENT_FAILED", message: "503 from the provider" });
  });

  test("a missing or malformed transcript is TRANSCRIPT_INVALID when the replay is made", () => {
    expect(() => replayAgent(join(tempDir(), "missing.json"))).toThrow(expect.objectContaining({ code: "TRANSCRIPT_INVALID" }));
    expect(() => replayAgent({ version: 1, entries: [{ prompt: "p" }] } as never)).toThrow(expect.objectContaining({ code: "TRANSCRIPT_INVALID" }));
  });
});
