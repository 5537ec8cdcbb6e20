/**
 * An AI SDK `ToolLoopAgent` on the real `@ai-sdk/anthropic` provider (pinned devDependency), its
 * `baseURL` pointed at the fake Anthropic Messages API: the provider's own request building,
 * response parsing and SSE streaming run, with nothing leaving the machine. As a task's agent it
 * calls a journaled tool, its structured output fills the task's row, and its usage and the
 * model that answered are recorded.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { createAnthropic } from "@ai-sdk/anthropic";
import { Output, ToolLoopAgent } from "ai";
import { z } from "zod";
import { createSmithers, defineTool, runWorkflow, type SmithersEvent } from "../../../src/index.ts";
import { sql, tempDbPath } from "../../helpers.ts";
import { anthropicApi } from "../../support/fake-model/anthropic.ts";
import { type FakeModelServer, startFakeModelServer } from "../../support/fake-model/core.ts";

const ownership = z.object({ owner: z.string(), files: z.number() });
const KEY = "sk-ant-fake-key";

const servers: FakeModelServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

/** A fake server and an Anthropic provider pointed at it. */
function provider() {
  const server = startFakeModelServer([anthropicApi]);
  servers.push(server);
  return { server, anthropic: createAnthropic({ baseURL: `${server.url}/v1`, apiKey: KEY }) };
}

/** The tool the agent calls: journaled by Smithers when it runs inside a task. */
const lookup = defineTool({
  name: "lookup",
  description: "Who owns a file",
  schema: z.object({ file: z.string() }),
  execute: async ({ file }) => ({ file, owner: "ada" }),
});

type Body = { messages?: Array<{ role: string; content: unknown }>; output_config?: { format?: { type?: string } }; tools?: Array<{ name: string }> };

describe("an AI SDK agent on @ai-sdk/anthropic against the fake Anthropic API", () => {
  for (const [mode, modelId] of [
    ["native structured output (output_config.format)", "claude-sonnet-4-5"],
    ["the SDK's json tool (a model without native structured output)", "claude-3-haiku-20240307"],
  ] as const) {
    test(`as a task's agent: calls the journaled tool, its structured output is the row, usage and the answering model recorded; ${mode}`, async () => {
      const { server, anthropic } = provider();
      server.script(
        { toolCalls: [{ name: "lookup", input: { file: "src/a.ts" } }], usage: { inputTokens: 120, cachedInputTokens: 20, outputTokens: 15 } },
        { json: { owner: "ada", files: 1 }, model: `${modelId}-20990101`, usage: { inputTokens: 200, cachedInputTokens: 150, outputTokens: 12 } },
      );
      const agent = new ToolLoopAgent({
        model: anthropic(modelId),
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
      const events: SmithersEvent[] = [];
      const result = await runWorkflow(wf, { runId: "a1", onEvent: (e) => events.push(e) });
      expect(result.status).toBe("finished");
      expect(sql(dbPath, "SELECT owner, files FROM ownership")).toEqual([{ owner: "ada", files: 1 }]);
      expect(sql(dbPath, "SELECT tool_name, input_json, output_json, status FROM _smithers_tool_calls")).toEqual([
        { tool_name: "lookup", input_json: '{"file":"src/a.ts"}', output_json: '{"file":"src/a.ts","owner":"ada"}', status: "succeeded" },
      ]);
      // Both steps' tokens; Anthropic's input_tokens leave out cache reads, the recorded input includes them.
      expect(sql(dbPath, "SELECT input_tokens, cached_input_tokens, output_tokens, cost_usd, agent_model FROM _smithers_attempts")).toEqual([
        { input_tokens: 320, cached_input_tokens: 170, output_tokens: 27, cost_usd: null, agent_model: `${modelId}-20990101` },
      ]);
      expect(events.some((e) => e.type === "NodeOutput" && e.stream === "tool" && e.text.startsWith("lookup"))).toBe(true);

      // What the provider really sent: the key, the API version, the tool, and the tool's result in the second turn; streamed (SSE), as the engine streams AI SDK agents.
      const turns = server.requests.filter((r) => r.path === "/v1/messages");
      expect(turns).toHaveLength(2);
      expect(turns.every((r) => r.headers["x-api-key"] === KEY && r.headers["anthropic-version"] === "2023-06-01" && r.stream === true)).toBe(true);
      const second = turns[1]!.body as Body;
      expect(second.tools?.map((t) => t.name)).toContain("lookup");
      expect(JSON.stringify(second.messages?.at(-1))).toContain('\\"owner\\":\\"ada\\"');
      if (modelId === "claude-sonnet-4-5") expect(second.output_config?.format?.type).toBe("json_schema");
      else expect(second.tools?.map((t) => t.name)).toContain("json");
    });
  }

  test("streams over SSE: the tool's input and the answer arrive in pieces, then the structured output and the usage of every step", async () => {
    const { server, anthropic } = provider();
    server.script(
      { toolCalls: [{ name: "lookup", input: { file: "src/b.ts" } }], chunkDelayMs: 5 },
      { json: { owner: "ada", files: 2 }, chunkDelayMs: 5, usage: { inputTokens: 300, cachedInputTokens: 100, outputTokens: 40 } },
    );
    const agent = new ToolLoopAgent({ model: anthropic("claude-sonnet-4-5"), tools: { lookup }, output: Output.object({ schema: ownership }) });
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
    expect(server.requests.filter((r) => r.path === "/v1/messages").map((r) => r.stream)).toEqual([true, true]);
  });

  test("errors come back shaped like Anthropic's: the SDK itself retries a 429 that names retry-after; a 401 is an APICallError with the body", async () => {
    const { server, anthropic } = provider();
    server.script({ error: { status: 429, headers: { "retry-after": "0" } } }, { json: { owner: "bob", files: 3 } });
    const agent = new ToolLoopAgent({ model: anthropic("claude-sonnet-4-5"), output: Output.object({ schema: ownership }) });
    expect((await agent.generate({ prompt: "Who?" })).output).toEqual({ owner: "bob", files: 3 });
    expect(server.requests.filter((r) => r.path === "/v1/messages")).toHaveLength(2);

    server.script({ error: { status: 401 } });
    const error = (await agent.generate({ prompt: "Who?" }).catch((e: unknown) => e)) as { statusCode?: number; responseBody?: string };
    expect(error.statusCode).toBe(401);
    expect(JSON.parse(error.responseBody ?? "{}")).toEqual({ type: "error", error: { type: "authentication_error", message: "invalid x-api-key" } });
  });

  test("as a task's agent, the provider's failures get the CLI agents' codes: 401 AGENT_AUTH_FAILED and 404 AGENT_MODEL_NOT_FOUND not retried, 429 AGENT_RATE_LIMITED retried after retry-after", async () => {
    const cases = [
      { error: { status: 401 }, code: "AGENT_AUTH_FAILED", attempts: 1 },
      { error: { status: 404, type: "not_found_error", message: "model: claude-nope" }, code: "AGENT_MODEL_NOT_FOUND", attempts: 1 },
    ] as const;
    for (const c of cases) {
      const { server, anthropic } = provider();
      server.script({ error: c.error });
      const agent = new ToolLoopAgent({ model: anthropic("claude-sonnet-4-5"), output: Output.object({ schema: ownership }), maxRetries: 0 });
      const dbPath = tempDbPath();
      const { smithers, Workflow, Task, outputs } = createSmithers({ ownership }, { dbPath });
      const wf = smithers(() => (
        <Workflow name="refused">
          <Task id="own" output={outputs.ownership} agent={agent} retries={2}>
            Who owns src/a.ts?
          </Task>
        </Workflow>
      ));
      const run = await runWorkflow(wf, { runId: "r1" });
      expect({ status: run.status, code: run.error?.code }).toEqual({ status: "failed", code: c.code });
      expect(sql(dbPath, "SELECT COUNT(*) AS n FROM _smithers_attempts")).toEqual([{ n: c.attempts }]);
    }

    // A 429 the SDK gave up on (its own retries off): the engine waits the 1 s the header asks for, then succeeds.
    const { server, anthropic } = provider();
    server.script({ error: { status: 429, headers: { "retry-after": "1" } } }, { json: { owner: "cy", files: 4 } });
    const agent = new ToolLoopAgent({ model: anthropic("claude-sonnet-4-5"), output: Output.object({ schema: ownership }), maxRetries: 0 });
    const dbPath = tempDbPath();
    const { smithers, Workflow, Task, outputs } = createSmithers({ ownership }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="limited">
        <Task id="own" output={outputs.ownership} agent={agent} retries={1} retryPolicy={{ backoff: "fixed", initialDelayMs: 600_000 }}>
          Who owns src/a.ts?
        </Task>
      </Workflow>
    ));
    const events: SmithersEvent[] = [];
    const run = await runWorkflow(wf, { runId: "r1", onEvent: (e) => events.push(e) });
    expect(run.status).toBe("finished");
    expect(events.flatMap((e) => (e.type === "NodeRetrying" ? [e.delayMs] : []))).toEqual([1000]);
    expect(sql(dbPath, "SELECT state, json_extract(error_json, '$.code') AS code FROM _smithers_attempts ORDER BY attempt")).toEqual([
      { state: "failed", code: "AGENT_RATE_LIMITED" },
      { state: "finished", code: null },
    ]);
  }, 20_000);
});
