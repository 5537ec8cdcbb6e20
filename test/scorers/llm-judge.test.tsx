/** @jsxImportSource smithers-workflows */
/**
 * llmJudge with our scripted agent, and with an AI SDK agent on @ai-sdk/openai-compatible against
 * the fake Chat Completions server: the verdict becomes the row, the judge's tokens go to meta.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { ToolLoopAgent } from "ai";
import { z } from "zod";
import { createSmithers, llmJudge, runWorkflow, scriptedAgent, type Scorer } from "../../src/index.ts";
import { errorOf, query, tempDbPath } from "../helpers.ts";
import { type FakeModelServer, startFakeModelServer } from "../support/fake-model/core.ts";
import { openaiChat } from "../support/fake-model/openai-chat.ts";

const summary = z.object({ text: z.string() });

const servers: FakeModelServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

/** Runs one compute task (text "short") judged by `judge`; returns its score row. */
async function judged(judge: Scorer) {
  const dbPath = tempDbPath();
  const kit = createSmithers({ summary }, { dbPath });
  const wf = kit.smithers(() => (
    <kit.Workflow name="judged">
      <kit.Task id="sum" output={kit.outputs.summary} scorers={{ quality: { scorer: judge } }} groundTruth="a short text">
        {() => ({ text: "short" })}
      </kit.Task>
    </kit.Workflow>
  ));
  expect((await runWorkflow(wf, { runId: "r" })).status).toBe("finished");
  const rows = await query<{ scorer_id: string; status: string; score: number; reason: string; meta_json: string; error: string | null }>(
    dbPath,
    "SELECT scorer_id, status, score, reason, meta_json, error FROM _smithers_scorers",
  );
  return rows[0]!;
}

describe("llmJudge", () => {
  test("with the scripted agent: the judge sees instructions, output and ground truth; its verdict is the row", async () => {
    const agent = scriptedAgent([{ score: 0.8, reason: "concise" }], { id: "judge" });
    const row = await judged(llmJudge({ id: "quality", name: "Quality", description: "", judge: agent, instructions: "Rate brevity." }));
    expect(row).toMatchObject({ scorer_id: "quality", status: "scored", score: 0.8, reason: "concise", error: null });
    expect(JSON.parse(row.meta_json)).toMatchObject({ judge: "judge", calls: 1 });
    expect(agent.calls[0]!.prompt).toContain("Rate brevity.");
    expect(agent.calls[0]!.prompt).toContain('"text":"short"');
    expect(agent.calls[0]!.prompt).toContain("a short text");
  });

  test("a verdict outside 0..1 gets a correction call; the corrected one is recorded", async () => {
    const agent = scriptedAgent([
      { score: 7, reason: "great" },
      { score: 0.7, reason: "great" },
    ]);
    const row = await judged(llmJudge({ agent, rubric: "Rate it." }));
    expect(row).toMatchObject({ scorer_id: "llm-judge", status: "scored", score: 0.7 });
    expect(agent.calls.length).toBe(2);
  });

  test("a judge that keeps failing is a SCORER_FAILED row, and the run still finishes", async () => {
    const row = await judged(llmJudge({ judge: scriptedAgent([new Error("overloaded")]), instructions: "Rate it." }));
    expect(row).toMatchObject({ status: "error", score: null });
    expect(row.error).toStartWith("SCORER_FAILED: ");
  });

  test("an AI SDK agent against the fake model server: the verdict is the row, and its tokens are in meta", async () => {
    const server = startFakeModelServer([openaiChat]);
    servers.push(server);
    server.script({ json: { score: 0.6, reason: "mostly right" }, usage: { inputTokens: 321, outputTokens: 12 } });
    const compatible = createOpenAICompatible({ name: "fake", baseURL: `${server.url}/v1`, apiKey: "sk-fake", includeUsage: true });
    const judge = new ToolLoopAgent({ model: compatible.chatModel("judge-model"), instructions: "You grade outputs." });
    const row = await judged(
      llmJudge({
        id: "q",
        name: "Q",
        description: "",
        judge,
        instructions: "Grade the summary.",
        promptTemplate: ({ output }) => `Summary: ${JSON.stringify(output)}`,
      }),
    );
    expect(row).toMatchObject({ scorer_id: "q", status: "scored", score: 0.6, reason: "mostly right" });
    expect(JSON.parse(row.meta_json)).toMatchObject({ inputTokens: 321, outputTokens: 12, model: "judge-model" });
    expect(JSON.stringify(server.requests.at(-1)!.body)).toContain('Summary: {\\"text\\":\\"short\\"}');
  });

  test("without a judge or instructions it is INVALID_SCORER", () => {
    expect(errorOf(() => llmJudge({ instructions: "x" })).code).toBe("INVALID_SCORER");
    expect(errorOf(() => llmJudge({ judge: scriptedAgent([]) })).code).toBe("INVALID_SCORER");
  });
});
