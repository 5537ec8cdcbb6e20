import { describe, expect, test } from "bun:test";
import { GeminiAgent } from "../../../src/agents/index.ts";
import { fakeCli, listeners } from "./fake-cli.ts";

describe("GeminiAgent", () => {
  test("runs `gemini --output-format stream-json --yolo` with the system prompt and prompt on stdin, in the call's cwd", async () => {
    const fake = fakeCli();
    await new GeminiAgent({ env: fake.env, instructions: "Be brief." }).generate({ prompt: "List files", cwd: fake.dir });
    const record = fake.record();
    expect(record.argv).toEqual(["--output-format", "stream-json", "--yolo"]);
    expect(record.stdin).toBe("Be brief.\n\nList files");
    expect(record.cwd).toBe(fake.dir);
  });

  test("replies with the assistant text after the last tool call and the result's token counts", async () => {
    const fake = fakeCli();
    const reply = await new GeminiAgent({ env: fake.env }).generate({ prompt: "p" });
    expect(reply).toEqual({ text: "Done: one file.", usage: { inputTokens: 120, cachedInputTokens: 100, outputTokens: 20, model: "gemini-2.5-pro" } });
  });

  test("reports session, text deltas, tool call and result, and usage events", async () => {
    const fake = fakeCli();
    const l = listeners();
    await new GeminiAgent({ env: fake.env }).generate({ prompt: "p", onEvent: l.onEvent });
    expect(l.of("session")).toEqual([{ type: "session", sessionId: "sess-gemini-1" }]);
    expect(l.of("text").map((e) => e.text)).toEqual(["Let me ", "look.", "Done", ": on", "e fi", "le."]);
    expect(l.of("tool-call")).toEqual([{ type: "tool-call", toolName: "run_shell_command", callId: "tool-1", input: { command: "ls" } }]);
    expect(l.of("tool-result")).toEqual([{ type: "tool-result", toolName: "run_shell_command", callId: "tool-1", output: "README.md", isError: false }]);
    expect(l.of("usage")).toHaveLength(1);
  });

  test("passes each option as its gemini flag, lists comma-separated, extraArgs last", async () => {
    const fake = fakeCli();
    const agent = new GeminiAgent({
      env: fake.env,
      model: "gemini-2.5-flash",
      approvalMode: "auto_edit",
      sandbox: true,
      allowedTools: ["read_file", "run_shell_command(git)"],
      allowedMcpServerNames: ["github", "fs"],
      includeDirectories: ["../a", "../b"],
      extensions: ["ext1"],
      resume: "latest",
      debug: true,
      extraArgs: ["--skip-trust"],
    });
    await agent.generate({ prompt: "p" });
    expect(fake.record().argv).toEqual([
      ...["--output-format", "stream-json", "--model", "gemini-2.5-flash", "--approval-mode", "auto_edit", "--sandbox"],
      ...["--allowed-tools", "read_file,run_shell_command(git)", "--allowed-mcp-server-names", "github,fs"],
      ...["--include-directories", "../a,../b", "--extensions", "ext1", "--resume", "latest", "--debug", "--skip-trust"],
    ]);
  });

  test("yolo false passes no approval flag", async () => {
    const fake = fakeCli();
    await new GeminiAgent({ env: fake.env, yolo: false }).generate({ prompt: "p" });
    expect(fake.record().argv).toEqual(["--output-format", "stream-json"]);
  });

  test("sets GEMINI_API_KEY from apiKey and GEMINI_CLI_HOME from configDir", async () => {
    const fake = fakeCli();
    await new GeminiAgent({ env: fake.env, apiKey: "g-key", configDir: "/tmp/gemini-home" }).generate({ prompt: "p" });
    expect(fake.record().env).toMatchObject({ GEMINI_API_KEY: "g-key", GEMINI_CLI_HOME: "/tmp/gemini-home" });
  });
});
