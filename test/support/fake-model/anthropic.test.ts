/**
 * The fake Anthropic Messages API's own contract, where the real clients' tests do not reach:
 * its side-call defaults, the shape of its errors and of an unscripted turn, and its SSE order.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { ANTHROPIC_DEFAULT_TEXT, anthropicApi } from "./anthropic.ts";
import { type FakeModelServer, startFakeModelServer } from "./core.ts";

let server: FakeModelServer;
afterEach(() => server.stop());

const post = (path: string, body: unknown) =>
  fetch(`${server.url}${path}`, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });

describe("anthropicApi", () => {
  test("answers count_tokens and the model list with defaults, logged as not scripted and never taking a scripted reply", async () => {
    server = startFakeModelServer([anthropicApi]);
    server.script({ text: "kept for a model turn" });
    const counted = (await (await post("/v1/messages/count_tokens", { model: "claude-x", messages: [{ role: "user", content: "hello there" }] })).json()) as {
      input_tokens: number;
    };
    expect(counted.input_tokens).toBeGreaterThan(0);
    expect(((await (await fetch(`${server.url}/v1/models`)).json()) as { data: { id: string }[] }).data.map((m) => m.id)).toEqual(["claude-fake-1"]);
    expect(await (await fetch(`${server.url}/v1/models/claude-sonnet-4-5`)).json()).toMatchObject({ type: "model", id: "claude-sonnet-4-5" });
    expect(server.pending()).toBe(1);
    expect(server.requests.map((r) => [r.path, r.scripted])).toEqual([
      ["/v1/messages/count_tokens", false],
      ["/v1/models", false],
      ["/v1/models/claude-sonnet-4-5", false],
    ]);
  });

  test("an error reply has Anthropic's body and status, a request-id, and retry-after on a 429 unless the reply sets its own", async () => {
    server = startFakeModelServer([anthropicApi]);
    server.script({ error: { status: 429 } }, { error: { status: 529, headers: { "retry-after": "7" } } }, { error: { status: 400, message: "bad" } });
    const limited = await post("/v1/messages", { model: "m" });
    expect([limited.status, limited.headers.get("retry-after"), limited.headers.get("request-id")?.startsWith("req_")]).toEqual([429, "1", true]);
    expect(((await limited.json()) as { error: { type: string } }).error.type).toBe("rate_limit_error");
    const overloaded = await post("/v1/messages", { model: "m" });
    expect([overloaded.status, overloaded.headers.get("retry-after")]).toEqual([529, "7"]);
    expect(await overloaded.json()).toEqual({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } });
    expect(await (await post("/v1/messages", { model: "m" })).json()).toEqual({ type: "error", error: { type: "invalid_request_error", message: "bad" } });
  });

  test("an unscripted turn gets a short text with the default usage; a streamed one comes in Anthropic's event order", async () => {
    server = startFakeModelServer([anthropicApi]);
    expect(await (await post("/v1/messages", { model: "claude-x" })).json()).toMatchObject({
      type: "message",
      model: "claude-x",
      content: [{ type: "text", text: ANTHROPIC_DEFAULT_TEXT }],
      stop_reason: "end_turn",
      usage: { input_tokens: 100, output_tokens: 20 },
    });
    server.script({ text: "hi", toolCalls: [{ name: "Bash", input: { command: "ls" }, id: "toolu_1" }] });
    const body = await (await post("/v1/messages", { model: "claude-x", stream: true })).text();
    const events = [...body.matchAll(/^event: (\w+)$/gm)].map((m) => m[1]);
    const start = "content_block_start";
    const delta = "content_block_delta";
    const stop = "content_block_stop";
    // "hi" in two pieces, then the tool's 16-character input in three.
    expect(events).toEqual(["message_start", "ping", start, delta, delta, stop, start, delta, delta, delta, stop, "message_delta", "message_stop"]);
    expect(body).toContain('"stop_reason":"tool_use"');
    expect(body).toContain('"partial_json"');
  });
});
