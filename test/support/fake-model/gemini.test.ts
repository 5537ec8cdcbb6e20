import { afterAll, describe, expect, test } from "bun:test";
import { startFakeModelServer } from "./core.ts";
import { exampleOf, geminiApi } from "./gemini.ts";

const server = startFakeModelServer([geminiApi]);
afterAll(() => server.stop());

const post = (path: string, body: unknown) =>
  fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
type Generated = { candidates: { content: { parts: { text?: string }[] } }[] };
const turn = { contents: [{ role: "user", parts: [{ text: "hi" }] }], tools: [{ functionDeclarations: [{ name: "run_shell_command" }] }] };

describe("the fake Gemini API", () => {
  test("answers generateContent with a candidate, its finish reason, usage metadata and the model version", async () => {
    server.script({ text: "hello", model: "gemini-2.5-pro-001", usage: { inputTokens: 10, outputTokens: 3, cachedInputTokens: 4, reasoningTokens: 2 } });
    const body = await (await post("/v1beta/models/gemini-2.5-pro:generateContent", turn)).json();
    expect(body).toMatchObject({
      candidates: [{ content: { role: "model", parts: [{ text: "hello" }] }, finishReason: "STOP" }],
      usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 3, totalTokenCount: 15, cachedContentTokenCount: 4, thoughtsTokenCount: 2 },
      modelVersion: "gemini-2.5-pro-001",
    });
  });

  test("streams with alt=sse: text chunks, then the function calls with the usage", async () => {
    server.script({ text: "abcdef", toolCalls: [{ name: "run_shell_command", input: { command: "ls" }, id: "c1" }] });
    const text = await (await post("/v1beta/models/m:streamGenerateContent?alt=sse", turn)).text();
    const events = text
      .split("\n\n")
      .filter(Boolean)
      .map((e) => JSON.parse(e.replace(/^data: /, "")));
    expect(events.map((e) => e.candidates[0].content.parts)).toEqual([
      [{ text: "ab" }],
      [{ text: "cd" }],
      [{ text: "ef" }],
      [{ functionCall: { name: "run_shell_command", args: { command: "ls" }, id: "c1" } }],
    ]);
    expect(events.at(-1)).toMatchObject({ candidates: [{ finishReason: "STOP" }], usageMetadata: { promptTokenCount: 100 } });
  });

  test("answers an unscripted JSON-schema call without tools (a CLI's router) with a value of its schema, leaving the script alone", async () => {
    server.script({ text: "for the turn" });
    const schema = {
      type: "OBJECT",
      properties: { reasoning: { type: "STRING" }, score: { type: "INTEGER" }, who: { type: "string", enum: ["user", "model"] } },
      required: ["reasoning", "score", "who"],
    };
    const router = await post("/v1beta/models/small:generateContent", { contents: turn.contents, generationConfig: { responseJsonSchema: schema } });
    const body = (await router.json()) as Generated;
    expect(JSON.parse(body.candidates[0]!.content.parts[0]!.text!)).toEqual({ reasoning: "ok", score: 1, who: "user" });
    expect(server.pending()).toBe(1);
    const next = (await (await post("/v1beta/models/m:generateContent", turn)).json()) as Generated;
    expect(next.candidates[0]!.content.parts).toEqual([{ text: "for the turn" }]);
    expect(exampleOf({ type: ["array", "null"] })).toEqual([]);
  });

  test("shapes a scripted error like Google's, a retry-after header as a RetryInfo detail", async () => {
    server.script({ error: { status: 429, message: "slow down", headers: { "retry-after": "7" } } });
    const response = await post("/v1beta/models/m:generateContent", turn);
    expect(response.status).toBe(429);
    expect(await response.json()).toEqual({
      error: {
        code: 429,
        message: "slow down",
        status: "RESOURCE_EXHAUSTED",
        details: [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "7s" }],
      },
    });
  });

  test("counts tokens and lists models", async () => {
    expect(await (await post("/v1beta/models/m:countTokens", turn)).json()).toEqual({ totalTokens: expect.any(Number) });
    const list = (await (await fetch(`${server.url}/v1beta/models`)).json()) as { models: { name: string }[] };
    expect(list.models.map((m) => m.name)).toContain("models/gemini-2.5-pro");
  });
});
