import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
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

  test("sets GEMINI_API_KEY from apiKey", async () => {
    const fake = fakeCli();
    await new GeminiAgent({ env: fake.env, apiKey: "g-key" }).generate({ prompt: "p" });
    expect(fake.record().env).toMatchObject({ GEMINI_API_KEY: "g-key" });
  });

  test("gives the CLI its quiet defaults and API-key auth in a temporary home linking to the real one, removed after the call; trusts the workspace, skips the relaunch", async () => {
    const fake = fakeCli();
    const real = join(fake.dir, "home");
    mkdirSync(join(real, ".gemini"), { recursive: true });
    writeFileSync(join(real, ".gemini", "oauth_creds.json"), "{}");
    await new GeminiAgent({ env: fake.env, apiKey: "g-key", configDir: real }).generate({ prompt: "p" });
    const record = fake.record();
    expect(record.env).toMatchObject({ GEMINI_CLI_TRUST_WORKSPACE: "true", GEMINI_CLI_NO_RELAUNCH: "true" });
    expect(JSON.parse(record.settings!)).toEqual({
      privacy: { usageStatisticsEnabled: false },
      general: { maxAttempts: 1 },
      security: { auth: { selectedType: "gemini-api-key" } },
    });
    const overlay = record.env.GEMINI_CLI_HOME!;
    expect(overlay).not.toBe(real);
    expect(existsSync(overlay)).toBe(false);
    // The CLI's own files stay in the real home: its login, and where it keeps sessions.
    expect(readdirSync(join(real, ".gemini")).sort()).toEqual(["history", "oauth_creds.json", "tmp"]);
  });

  test("selects no auth without an API key, or when the environment asks for Vertex AI", async () => {
    const cases: Record<string, string>[] = [{ GEMINI_API_KEY: "" }, { GEMINI_API_KEY: "k", GOOGLE_GENAI_USE_VERTEXAI: "true" }];
    for (const env of cases) {
      const fake = fakeCli("ok", env);
      await new GeminiAgent({ env: fake.env }).generate({ prompt: "p" });
      expect(JSON.parse(fake.record().settings!)).toEqual({ privacy: { usageStatisticsEnabled: false }, general: { maxAttempts: 1 } });
    }
  });

  test("keeps the user's own trust and relaunch variables, and merges the user's settings (comments allowed) over its own, leaving their file as it was", async () => {
    const fake = fakeCli();
    const real = join(fake.dir, "home");
    mkdirSync(join(real, ".gemini"), { recursive: true });
    const theirs = '{\n  // mine\n  "general": { "maxAttempts": 4 }, /* and */ "ui": { "theme": "A // B" }\n}';
    writeFileSync(join(real, ".gemini", "settings.json"), theirs);
    const env = { ...fake.env, HOME: real, GEMINI_API_KEY: "", GEMINI_CLI_TRUST_WORKSPACE: "false", GEMINI_CLI_NO_RELAUNCH: "" };
    await new GeminiAgent({ env }).generate({ prompt: "p" });
    const record = fake.record();
    expect(record.env).toMatchObject({ GEMINI_CLI_TRUST_WORKSPACE: "false", GEMINI_CLI_NO_RELAUNCH: "" });
    expect(JSON.parse(record.settings!)).toEqual({ privacy: { usageStatisticsEnabled: false }, general: { maxAttempts: 4 }, ui: { theme: "A // B" } });
    expect(readFileSync(join(real, ".gemini", "settings.json"), "utf8")).toBe(theirs);
  });

  test("runs on the real home, its settings as they are, when the user's settings.json is not JSON", async () => {
    const fake = fakeCli();
    const real = join(fake.dir, "home");
    mkdirSync(join(real, ".gemini"), { recursive: true });
    writeFileSync(join(real, ".gemini", "settings.json"), "{ not json");
    await new GeminiAgent({ env: fake.env, configDir: real }).generate({ prompt: "p" });
    expect(fake.record().env.GEMINI_CLI_HOME).toBe(real);
    expect(fake.record().settings).toBe("{ not json");
  });
});
