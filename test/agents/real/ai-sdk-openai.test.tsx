/**
 * An AI SDK ToolLoopAgent on the real `@ai-sdk/openai` provider (its Responses model), with
 * `baseURL` at the fake model server: the provider's own request building and response parsing
 * (JSON and SSE), a tool turn, structured output, usage and the answering model, in a workflow.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { createOpenAI } from "@ai-sdk/openai";
import { Output, ToolLoopAgent } from "ai";
import { z } from "zod";
import type { Agent } from "../../../src/agents/index.ts";
import { createSmithers, defineTool, runWorkflow, type SmithersEvent } from "../../../src/index.ts";
import { sql, tempDbPath } from "../../helpers.ts";
import { type FakeReply, type LoggedRequest, startFakeModelServer } from "../../support/fake-model/core.ts";
import { openAiResponses } from "../../support/fake-model/openai-responses.ts";

const server = startFakeModelServer([openAiResponses]);
afterAll(() => server.stop());

const openai = createOpenAI({ baseURL: `${server.url}/v1`, apiKey: "sk-fake-ai-sdk" });
const ofModel = (model: string) => (r: LoggedRequest) => r.model === model;
const reply = (model: string, r: Omit<FakeReply, "match">): FakeReply => ({ ...r, match: ofModel(model) });

const owner = z.object({ file: z.string(), owner: z.string() });
const pricing = { "gpt-fake-2026-11-01": { inputPerMTok: 2, cachedInputPerMTok: 0.5, outputPerMTok: 10 } };

/** A `lookup` tool the model calls once: it records its input and answers "ada". */
function lookupTool() {
  const calls: string[] = [];
  const lookup = defineTool({
    name: "lookup",
    description: "Who owns a file",
    schema: z.object({ file: z.string() }),
    execute: async ({ file }) => {
      calls.push(file);
      return { owner: "ada" };
    },
  });
  return { lookup, calls };
}

/** The tool call, then the JSON answer, from the dated model that answered `model`. */
function scriptToolTurn(model: string) {
  server.script(
    reply(model, { toolCalls: [{ name: "lookup", input: { file: "src/a.ts" } }], usage: { inputTokens: 300, outputTokens: 12, cachedInputTokens: 100 } }),
    reply(model, {
      json: { file: "src/a.ts", owner: "ada" },
      model: "gpt-fake-2026-11-01",
      usage: { inputTokens: 400, outputTokens: 18, cachedInputTokens: 300 },
    }),
  );
}

async function runTask(agent: Agent) {
  const dbPath = tempDbPath();
  const { smithers, Workflow, Task, outputs } = createSmithers({ owner }, { dbPath });
  const wf = smithers(() => (
    <Workflow name="ai-sdk-openai">
      <Task id="own" output={outputs.owner} agent={agent}>
        Who owns src/a.ts?
      </Task>
    </Workflow>
  ));
  const events: SmithersEvent[] = [];
  const run = await runWorkflow(wf, { runId: "r1", pricing, onEvent: (e) => events.push(e) });
  return { run, dbPath, events };
}

/** Both steps' tokens, priced for the model that answered the last one. */
const EXPECTED_ATTEMPT = {
  input_tokens: 700,
  cached_input_tokens: 400,
  output_tokens: 30,
  cost_usd: expect.closeTo(((700 - 400) * 2 + 400 * 0.5 + 30 * 10) / 1e6, 12),
  agent_model: "gpt-fake-2026-11-01",
};

describe("a ToolLoopAgent on @ai-sdk/openai's Responses model against the fake server", () => {
  test.concurrent("as a task's agent (streamed by the engine): calls its tool, sends the result back, answers with Output.object; the row, usage, price and model are stored", async () => {
    const model = "gpt-fake-generate";
    scriptToolTurn(model);
    const { lookup, calls } = lookupTool();
    const agent = new ToolLoopAgent({ model: openai.responses(model), tools: { lookup }, output: Output.object({ schema: owner }) });
    const { run, dbPath } = await runTask(agent);
    expect(run.status).toBe("finished");
    expect(calls).toEqual(["src/a.ts"]);
    expect(sql(dbPath, "SELECT file, owner FROM owner")).toEqual([{ file: "src/a.ts", owner: "ada" }]);
    expect(sql(dbPath, "SELECT input_tokens, cached_input_tokens, output_tokens, cost_usd, agent_model FROM _smithers_attempts")).toEqual([EXPECTED_ATTEMPT]);

    const [first, second] = server.requests.filter(ofModel(model));
    const firstBody = first?.body as { stream?: boolean; tools: { type: string; name: string }[]; text?: { format?: { type?: string } } };
    expect(firstBody.stream).toBe(true); // the engine streams an AI SDK agent (live output)
    expect(firstBody.tools).toEqual([expect.objectContaining({ type: "function", name: "lookup" })]);
    expect(firstBody.text?.format?.type).toBe("json_schema");
    const output = (second!.body as { input: { type: string; output?: unknown }[] }).input.find((i) => i.type === "function_call_output");
    expect(JSON.stringify(output?.output)).toContain("ada");
  });

  test.concurrent("stream: the provider's SSE path, its text deltas forwarded as the task's output while it runs, the stream's usage stored", async () => {
    const model = "gpt-fake-stream";
    scriptToolTurn(model);
    const { lookup } = lookupTool();
    const loop = new ToolLoopAgent({ model: openai.responses(model), tools: { lookup }, output: Output.object({ schema: owner }) });
    const deltas: string[] = [];
    // A user's adapter: the agent's stream, each text delta reported as it arrives.
    const streaming: Agent = {
      generate: async ({ prompt, abortSignal, onEvent }) => {
        const result = await loop.stream({ prompt, abortSignal });
        for await (const delta of result.textStream) {
          deltas.push(delta);
          onEvent?.({ type: "text", text: delta });
        }
        return { text: await result.text, output: await result.output, usage: await result.totalUsage, response: await result.response };
      },
    };
    const { run, dbPath, events } = await runTask(streaming);
    expect(run.status).toBe("finished");
    expect(server.requests.filter(ofModel(model)).map((r) => r.stream)).toEqual([true, true]);
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join("")).toBe(JSON.stringify({ file: "src/a.ts", owner: "ada" }));
    const shown = events.flatMap((e) => (e.type === "NodeOutput" && e.stream === "text" ? [e.text] : [])).join("");
    expect(shown).toContain('"owner":"ada"');
    expect(sql(dbPath, "SELECT owner FROM owner")).toEqual([{ owner: "ada" }]);
    expect(sql(dbPath, "SELECT input_tokens, cached_input_tokens, output_tokens, cost_usd, agent_model FROM _smithers_attempts")).toEqual([EXPECTED_ATTEMPT]);
  });
});
