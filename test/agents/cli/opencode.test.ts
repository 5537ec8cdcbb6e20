import { describe, expect, test } from "bun:test";
import { OpenCodeAgent } from "../../../src/agents/index.ts";
import { OpenCodeStreamParser, retryAfter } from "../../../src/agents/cli/opencode.ts";
import { SmithersError } from "../../../src/errors/index.ts";
import { errorOf } from "../../helpers.ts";
import { fakeCli, listeners } from "./fake-cli.ts";

describe("OpenCodeAgent", () => {
  test("runs `opencode run --format json --auto --title --print-logs --log-level ERROR` with the system prompt and message on stdin, in the call's cwd", async () => {
    const fake = fakeCli();
    await new OpenCodeAgent({ env: fake.env, systemPrompt: "Be brief." }).generate({ prompt: "List files", cwd: fake.dir });
    const record = fake.record();
    expect(record.argv).toEqual(["run", "--format", "json", "--auto", "--title", "--print-logs", "--log-level", "ERROR"]);
    expect(record.stdin).toBe("Be brief.\n\nList files");
    expect(record.cwd).toBe(fake.dir);
  });

  test("replies with the last step's text and usage summed over the steps (cache counted as input, reasoning as output) with the cost", async () => {
    const fake = fakeCli();
    const reply = await new OpenCodeAgent({ env: fake.env, model: "anthropic/claude-sonnet-4-5" }).generate({ prompt: "p" });
    expect(reply.text).toBe("Done: one file.");
    const usage = reply.usage as Record<string, number | string>;
    expect(usage).toMatchObject({ inputTokens: 182, cachedInputTokens: 150, outputTokens: 21, model: "anthropic/claude-sonnet-4-5" });
    expect(usage.costUsd).toBeCloseTo(0.003, 10);
  });

  test("reports session, text, tool call and result, and usage after each step", async () => {
    const fake = fakeCli();
    const l = listeners();
    await new OpenCodeAgent({ env: fake.env }).generate({ prompt: "p", onEvent: l.onEvent });
    expect(l.of("session")).toEqual([{ type: "session", sessionId: "ses_1" }]);
    expect(l.of("text").map((e) => e.text)).toEqual(["Let me look.", "Done: one file."]);
    expect(l.of("tool-call")).toEqual([{ type: "tool-call", toolName: "bash", callId: "call_1", input: { command: "ls" } }]);
    expect(l.of("tool-result")).toEqual([{ type: "tool-result", toolName: "bash", callId: "call_1", output: "README.md\n", isError: false }]);
    expect(l.of("usage").map((e) => e.usage.outputTokens)).toEqual([6, 21]);
  });

  test("passes each option as its opencode flag, extraArgs last", async () => {
    const fake = fakeCli();
    const agent = new OpenCodeAgent({
      env: fake.env,
      model: "openai/gpt-5",
      agentName: "plan",
      sessionId: "ses_9",
      continueSession: true,
      attachFiles: ["src/a.ts", "src/b.ts"],
      variant: "high",
      yolo: false,
      extraArgs: ["--title", "t", "--log-level=DEBUG"],
    });
    await agent.generate({ prompt: "p" });
    expect(fake.record().argv).toEqual([
      ...["run", "--format", "json", "--model", "openai/gpt-5", "--agent", "plan", "--session", "ses_9", "--continue"],
      ...["--file", "src/a.ts", "--file", "src/b.ts", "--variant", "high", "--print-logs", "--title", "t", "--log-level=DEBUG"],
    ]);
  });

  test("names a continued session's title never (it has one) and a new one's after the prompt", async () => {
    const fake = fakeCli();
    await new OpenCodeAgent({ env: fake.env, sessionId: "ses_9" }).generate({ prompt: "p" });
    expect(fake.record().argv).not.toContain("--title");
    await new OpenCodeAgent({ env: fake.env }).generate({ prompt: "p" });
    expect(fake.record().argv).toContain("--title");
  });

  test("sets OPENCODE_DISABLE_MODELS_FETCH=1 unless the environment sets it", async () => {
    const fake = fakeCli();
    await new OpenCodeAgent({ env: fake.env }).generate({ prompt: "p" });
    expect(fake.record().env.OPENCODE_DISABLE_MODELS_FETCH).toBe("1");
    await new OpenCodeAgent({ env: { ...fake.env, OPENCODE_DISABLE_MODELS_FETCH: "0" } }).generate({ prompt: "p" });
    expect(fake.record().env.OPENCODE_DISABLE_MODELS_FETCH).toBe("0");
  });

  test("sets OPENCODE_CONFIG_DIR from configDir and passes env through", async () => {
    const fake = fakeCli();
    await new OpenCodeAgent({ env: { ...fake.env, FAKE_EXTRA: "1" }, configDir: "/tmp/oc" }).generate({ prompt: "p" });
    expect(fake.record().env).toMatchObject({ OPENCODE_CONFIG_DIR: "/tmp/oc", FAKE_EXTRA: "1" });
  });

  test("refuses apiKey (OpenCode reads each provider's own variable) with INVALID_OPTION", () => {
    const error = errorOf(() => new OpenCodeAgent({ apiKey: "k" } as never));
    expect(SmithersError.is(error, "INVALID_OPTION")).toBe(true);
    expect(error.message).toContain("env");
  });
});

describe("OpenCodeStreamParser", () => {
  const step = (cost: number, tokens: Record<string, unknown>) => ({ type: "step_finish", part: { type: "step-finish", cost, tokens } });
  const feed = (...records: Record<string, unknown>[]) => {
    const parser = new OpenCodeStreamParser(1 << 20);
    for (const r of records) parser.record(r, () => {});
    return parser.outcome();
  };
  const apiError = (statusCode: number, headers: Record<string, string> = {}) => ({
    type: "error",
    error: { name: "APIError", data: { message: "refused", statusCode, isRetryable: statusCode === 429, responseHeaders: headers } },
  });

  test("a cost of 0 for tokens spent is unknown (no price for the model), so pricing can apply; a real cost is kept", () => {
    expect(feed(step(0, { input: 70, output: 20, cache: { read: 30, write: 0 } })).usage).toEqual({
      inputTokens: 100,
      cachedInputTokens: 30,
      outputTokens: 20,
      costUsd: undefined,
    });
    expect(feed(step(0.002, { input: 70, output: 20 })).usage?.costUsd).toBe(0.002);
    expect(feed(step(0, { input: 0, output: 0 })).usage?.costUsd).toBe(0);
  });

  test("an error's statusCode classifies it: 401 and 403 auth, 404 model not found, 429 rate limited with the suggested delay", () => {
    expect(feed(apiError(401)).failure?.code).toBe("AGENT_AUTH_FAILED");
    expect(feed(apiError(403)).failure?.code).toBe("AGENT_AUTH_FAILED");
    expect(feed(apiError(404)).failure?.code).toBe("AGENT_MODEL_NOT_FOUND");
    expect(feed(apiError(429, { "retry-after": "7" })).failure).toMatchObject({ code: "AGENT_RATE_LIMITED", details: { statusCode: 429, retryAfterMs: 7000 } });
    expect(feed(apiError(500)).failure).toBeUndefined();
  });

  test("retryAfter reads retry-after-ms first, then retry-after in seconds or as an HTTP date", () => {
    expect(retryAfter({ "retry-after-ms": "150", "retry-after": "9" })).toBe(150);
    expect(retryAfter({ "retry-after": "2.5" })).toBe(2500);
    expect(retryAfter({ "retry-after": new Date(10_000).toUTCString() }, 4_000)).toBe(6_000);
    expect(retryAfter({ "retry-after": "soon" })).toBeUndefined();
    expect(retryAfter(undefined)).toBeUndefined();
  });
});
