/**
 * An AI SDK `ToolLoopAgent` on the real `@ai-sdk/openai-compatible` provider (pinned
 * devDependency), its `baseURL` pointed at the fake Chat Completions API: the provider's own
 * request building, response parsing and SSE streaming run, with nothing leaving the machine. As
 * a task's agent it calls a journaled tool, its structured output fills the task's row, and its
 * usage and the model that answered are recorded and priced.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { Output, ToolLoopAgent } from "ai";
import { z } from "zod";
import { createSmithers, defineTool, runWorkflow } from "../../../src/index.ts";
import { sql, tempDbPath } from "../../helpers.ts";
import { type FakeModelServer, startFakeModelServer } from "../../support/fake-model/core.ts";
import { messageText, openaiChat } from "../../support/fake-model/openai-chat.ts";

const ownership = z.object({ owner: z.string(), files: z.number() });
const KEY = "sk-fake-compatible";

const servers: FakeModelServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

/** A fake server and an openai-compatible provider pointed at it (usage asked for when streaming). */
function provider() {
  const server = startFakeModelServer([openaiChat]);
  servers.push(server);
  const compatible = createOpenAICompatible({ name: "fake", baseURL: `${server.url}/v1`, apiKey: KEY, includeUsage: true, supportsStructuredOutputs: true });
  return { server, compatible };
}

/** The tool the agent calls: journaled by Smithers when it runs inside a task. */
const lookup = defineTool({
  name: "lookup",
  description: "Who owns a file",
  schema: z.object({ file: z.string() }),
  execute: async ({ file }) => ({ file, owner: "ada" }),
});

type Body = {
  messages: { role: string; content: unknown; tool_call_id?: string }[];
  tools?: { function?: { name?: string } }[];
  response_format?: { type?: string };
  stream_options?: { include_usage?: boolean };
};
const turns = (server: FakeModelServer) => server.requests.filter((r) => r.path === "/v1/chat/completions");

describe("an AI SDK agent on @ai-sdk/openai-compatible against the fake Chat Completions API", () => {
  test("as a task's agent: calls the journaled tool, its structured output is the row, usage and the answering model recorded and priced", async () => {
    const { server, compatible } = provider();
    server.script(
      { toolCalls: [{ name: "lookup", input: { file: "src/a.ts" } }], usage: { inputTokens: 120, cachedInputTokens: 20, outputTokens: 15 } },
      { json: { owner: "ada", files: 1 }, model: "fake-model-2099-01-01", usage: { inputTokens: 200, cachedInputTokens: 150, outputTokens: 12 } },
    );
    const agent = new ToolLoopAgent({
      model: compatible.chatModel("fake-model"),
      tools: { lookup },
      output: Output.object({ schema: ownership }),
      instructions: "Answer from the tool.",
    });
    const dbPath = tempDbPath();
    const { smithers, Workflow, Task, outputs } = createSmithers({ ownership }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="owners">
        <Task id="owner" output={outputs.ownership} agent={agent}>
          Who owns src/a.ts?
        </Task>
      </Workflow>
    ));
    const pricing = { "fake-model-2099-01-01": { inputPerMTok: 1, cachedInputPerMTok: 0.1, outputPerMTok: 4 } };
    const result = await runWorkflow(wf, { runId: "c1", pricing });
    expect(result.status).toBe("finished");
    expect(sql(dbPath, "SELECT owner, files FROM ownership")).toEqual([{ owner: "ada", files: 1 }]);
    expect(sql(dbPath, "SELECT tool_name, input_json, output_json, status FROM _smithers_tool_calls")).toEqual([
      { tool_name: "lookup", input_json: '{"file":"src/a.ts"}', output_json: '{"file":"src/a.ts","owner":"ada"}', status: "succeeded" },
    ]);
    // Both steps' tokens (prompt_tokens include the cached ones), priced for the model the last response named.
    const cost = ((320 - 170) * 1 + 170 * 0.1 + 27 * 4) / 1e6;
    expect(sql(dbPath, "SELECT input_tokens, cached_input_tokens, output_tokens, cost_usd, agent_model FROM _smithers_attempts")).toEqual([
      { input_tokens: 320, cached_input_tokens: 170, output_tokens: 27, cost_usd: expect.closeTo(cost, 12), agent_model: "fake-model-2099-01-01" },
    ]);

    // What the provider really sent: the key, the tool, the schema as response_format, and the tool's result in the second turn.
    const [first, second] = turns(server);
    expect(turns(server)).toHaveLength(2);
    expect(first!.headers.authorization).toBe(`Bearer ${KEY}`);
    const body = second!.body as Body;
    expect(body.tools?.map((t) => t.function?.name)).toEqual(["lookup"]);
    expect(body.response_format?.type).toBe("json_schema");
    const toolMessage = body.messages.find((m) => m.role === "tool");
    expect(JSON.parse(messageText(toolMessage?.content))).toEqual({ file: "src/a.ts", owner: "ada" });
  });

  test("streams over SSE: the tool's arguments and the answer arrive in pieces, then the structured output and the usage chunk of every step", async () => {
    const { server, compatible } = provider();
    server.script(
      { toolCalls: [{ name: "lookup", input: { file: "src/b.ts" } }], chunkDelayMs: 5, usage: { inputTokens: 100, outputTokens: 20 } },
      { json: { owner: "ada", files: 2 }, chunkDelayMs: 5, usage: { inputTokens: 300, cachedInputTokens: 100, outputTokens: 40 } },
    );
    const agent = new ToolLoopAgent({ model: compatible.chatModel("fake-model"), tools: { lookup }, output: Output.object({ schema: ownership }) });
    const stream = await agent.stream({ prompt: "Who owns src/b.ts?" });
    const seen: string[] = [];
    let text = "";
    for await (const part of stream.fullStream) {
      seen.push(part.type);
      if (part.type === "text-delta") text += part.text;
    }
    expect(seen.filter((t) => t === "tool-input-delta").length).toBeGreaterThan(1);
    expect(seen.filter((t) => t === "text-delta").length).toBeGreaterThan(1);
    expect(seen.indexOf("tool-result")).toBeLessThan(seen.indexOf("text-delta"));
    expect(JSON.parse(text)).toEqual({ owner: "ada", files: 2 });
    expect(await stream.output).toEqual({ owner: "ada", files: 2 });
    const usage = await stream.totalUsage;
    expect([usage.inputTokens, usage.inputTokenDetails.cacheReadTokens, usage.outputTokens]).toEqual([400, 100, 60]);
    expect(turns(server).map((r) => [r.stream, (r.body as Body).stream_options?.include_usage])).toEqual([
      [true, true],
      [true, true],
    ]);
  });

  test("errors come back shaped like OpenAI's: the SDK itself retries a 429 that names retry-after; a 401 is an APICallError with the body", async () => {
    const { server, compatible } = provider();
    server.script({ error: { status: 429, headers: { "retry-after": "0" } } }, { json: { owner: "bob", files: 3 } });
    const agent = new ToolLoopAgent({ model: compatible.chatModel("fake-model"), output: Output.object({ schema: ownership }) });
    expect((await agent.generate({ prompt: "Who?" })).output).toEqual({ owner: "bob", files: 3 });
    expect(turns(server)).toHaveLength(2);

    server.script({ error: { status: 401, message: "Incorrect API key provided." } });
    const error = (await agent.generate({ prompt: "Who?" }).catch((e: unknown) => e)) as { statusCode?: number; responseBody?: string };
    expect(error.statusCode).toBe(401);
    expect(JSON.parse(error.responseBody ?? "{}")).toEqual({
      error: { message: "Incorrect API key provided.", type: "invalid_request_error", param: null, code: "invalid_api_key" },
    });
  });

  test("GET /v1/models lists the fake model; a client's title request is answered without taking a scripted turn", async () => {
    const { server } = provider();
    const models = (await (await fetch(`${server.url}/v1/models`)).json()) as { data: { id: string }[] };
    expect(models.data.map((m) => m.id)).toEqual(["fake-model"]);
    server.script({ text: "the scripted turn" });
    const title = await fetch(`${server.url}/v1/chat/completions`, {
      method: "POST",
      body: JSON.stringify({
        model: "fake-model",
        messages: [
          { role: "system", content: "You are a title generator. You output ONLY a thread title." },
          { role: "user", content: "Fix it" },
        ],
      }),
    });
    const answer = (await title.json()) as { choices: { message: { content: string } }[] };
    expect(answer.choices[0]!.message.content).toBe("Fake task");
    expect(server.pending()).toBe(1);
    expect(server.requests.at(-1)?.scripted).toBe(false);
  });
});
