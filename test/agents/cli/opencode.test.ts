import { describe, expect, test } from "bun:test";
import { OpenCodeAgent } from "../../../src/agents/index.ts";
import { SmithersError } from "../../../src/errors/index.ts";
import { errorOf } from "../../helpers.ts";
import { fakeCli, listeners } from "./fake-cli.ts";

describe("OpenCodeAgent", () => {
  test("runs `opencode run --format json --auto` with the system prompt and message on stdin, in the call's cwd", async () => {
    const fake = fakeCli();
    await new OpenCodeAgent({ env: fake.env, systemPrompt: "Be brief." }).generate({ prompt: "List files", cwd: fake.dir });
    const record = fake.record();
    expect(record.argv).toEqual(["run", "--format", "json", "--auto"]);
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
      extraArgs: ["--title", "t"],
    });
    await agent.generate({ prompt: "p" });
    expect(fake.record().argv).toEqual([
      ...["run", "--format", "json", "--model", "openai/gpt-5", "--agent", "plan", "--session", "ses_9", "--continue"],
      ...["--file", "src/a.ts", "--file", "src/b.ts", "--variant", "high", "--title", "t"],
    ]);
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
