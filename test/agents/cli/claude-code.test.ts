import { afterEach, describe, expect, test } from "bun:test";
import { ClaudeCodeAgent, type ClaudeCodeAgentOptions } from "../../../src/agents/index.ts";
import { SmithersError } from "../../../src/errors/index.ts";
import { errorOf } from "../../helpers.ts";
import { fakeCli, listeners } from "./fake-cli.ts";

const BASE_ARGS = ["-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages"];
const asRoot = process.getuid?.() === 0;

describe("ClaudeCodeAgent", () => {
  const inherited = process.env.ANTHROPIC_API_KEY;
  afterEach(() => {
    if (inherited === undefined) delete process.env.ANTHROPIC_API_KEY;
    else process.env.ANTHROPIC_API_KEY = inherited;
  });

  test("runs `claude -p --output-format stream-json --verbose --include-partial-messages` with the prompt on stdin, in the call's cwd, skipping permissions by default", async () => {
    const fake = fakeCli();
    await new ClaudeCodeAgent({ env: fake.env }).generate({ prompt: "Summarise the repo", cwd: fake.dir });
    const record = fake.record();
    expect(record.argv).toEqual([...BASE_ARGS, "--dangerously-skip-permissions"]);
    expect(record.stdin).toBe("Summarise the repo");
    expect(record.cwd).toBe(fake.dir);
  });

  test("replies with the result text and usage (cache reads and writes counted as input) and the cost", async () => {
    const fake = fakeCli();
    const reply = await new ClaudeCodeAgent({ env: fake.env }).generate({ prompt: "p" });
    expect(reply).toEqual({
      text: "Done: one file.",
      usage: { inputTokens: 115, cachedInputTokens: 100, outputTokens: 20, costUsd: 0.0123, model: "claude-sonnet-4-5" },
    });
  });

  test("reports session, text, tool call, tool result and usage events in stream order", async () => {
    const fake = fakeCli();
    const l = listeners();
    await new ClaudeCodeAgent({ env: fake.env }).generate({ prompt: "p", onEvent: l.onEvent });
    expect(l.events.filter((e) => e.type !== "process")).toEqual([
      { type: "session", sessionId: "sess-claude-1" },
      { type: "text", text: "Let me look." },
      { type: "tool-call", toolName: "Bash", callId: "toolu_1", input: { command: "ls" } },
      { type: "tool-result", toolName: "Bash", callId: "toolu_1", output: "README.md\n", isError: false },
      { type: "text", text: "Done: one file." },
      { type: "usage", usage: { inputTokens: 115, cachedInputTokens: 100, outputTokens: 20, costUsd: 0.0123, model: "claude-sonnet-4-5" } },
    ]);
  });

  test("passes each option as its claude flag, extraArgs last", async () => {
    const fake = fakeCli();
    const agent = new ClaudeCodeAgent({
      env: fake.env,
      model: "opus",
      systemPrompt: "Be careful.",
      permissionMode: "acceptEdits",
      allowedTools: ["Read", "Bash(git log:*)"],
      disallowedTools: ["WebFetch"],
      tools: ["Read", "Edit"],
      addDir: ["../a", "../b"],
      mcpConfig: ["./mcp.json"],
      strictMcpConfig: true,
      maxTurns: 7,
      maxBudgetUsd: 2.5,
      fallbackModel: "sonnet",
      resume: "sess-0",
      sessionId: "0b6c7a3e-0000-4000-8000-000000000000",
      continue: true,
      forkSession: true,
      extraArgs: ["--effort", "high"],
    });
    await agent.generate({ prompt: "p" });
    expect(fake.record().argv).toEqual([
      ...BASE_ARGS,
      ...["--model", "opus", "--append-system-prompt", "Be careful.", "--permission-mode", "acceptEdits"],
      ...["--allowedTools", "Read", "Bash(git log:*)", "--disallowedTools", "WebFetch", "--tools", "Read,Edit"],
      ...["--add-dir", "../a", "../b", "--mcp-config", "./mcp.json", "--strict-mcp-config"],
      ...["--max-turns", "7", "--max-budget-usd", "2.5", "--fallback-model", "sonnet"],
      ...["--resume", "sess-0", "--session-id", "0b6c7a3e-0000-4000-8000-000000000000", "--continue", "--fork-session"],
      ...["--effort", "high"],
    ]);
  });

  test("instructions is systemPrompt's other name; yolo false drops --dangerously-skip-permissions; tools [] and 'default' pass as such", async () => {
    const fake = fakeCli();
    await new ClaudeCodeAgent({ env: fake.env, instructions: "Only read.", yolo: false, tools: [] }).generate({ prompt: "p" });
    expect(fake.record().argv).toEqual([...BASE_ARGS, "--append-system-prompt", "Only read.", "--tools", ""]);
    await new ClaudeCodeAgent({ env: fake.env, tools: "default" }).generate({ prompt: "p" });
    expect(fake.record().argv).toEqual([...BASE_ARGS, "--dangerously-skip-permissions", "--tools", "default"]);
  });

  test("removes an inherited ANTHROPIC_API_KEY without apiKey (subscription billing), sets it from apiKey, keeps one given in env", async () => {
    process.env.ANTHROPIC_API_KEY = "inherited-key";
    const fake = fakeCli();
    const auth = (env: Record<string, string>) =>
      Object.fromEntries(Object.entries(env).filter(([key]) => ["ANTHROPIC_API_KEY", "CLAUDE_CONFIG_DIR", "FAKE_EXTRA"].includes(key)));
    await new ClaudeCodeAgent({ env: { ...fake.env, FAKE_EXTRA: "x" }, configDir: "/tmp/claude-work" }).generate({ prompt: "p" });
    expect(auth(fake.record().env)).toEqual({ CLAUDE_CONFIG_DIR: "/tmp/claude-work", FAKE_EXTRA: "x" });
    await new ClaudeCodeAgent({ env: fake.env, apiKey: "sk-explicit" }).generate({ prompt: "p" });
    expect(auth(fake.record().env)).toEqual({ ANTHROPIC_API_KEY: "sk-explicit" });
    await new ClaudeCodeAgent({ env: { ...fake.env, ANTHROPIC_API_KEY: "from-env" } }).generate({ prompt: "p" });
    expect(auth(fake.record().env)).toEqual({ ANTHROPIC_API_KEY: "from-env" });
  });

  test("turns off Claude Code's non-essential traffic (telemetry, error reports, update checks) unless the environment sets the variable", async () => {
    const fake = fakeCli();
    await new ClaudeCodeAgent({ env: fake.env }).generate({ prompt: "p" });
    expect(fake.record().env.CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC).toBe("1");
    // Claude Code takes any non-empty value as on: a user opts back in with an empty one, which is kept.
    await new ClaudeCodeAgent({ env: { ...fake.env, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "" } }).generate({ prompt: "p" });
    expect(fake.record().env.CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC).toBe("");
  });

  test.skipIf(!asRoot)(
    "as root, a call that skips permissions gets IS_SANDBOX=1 (Claude Code's only accepted value), unless the environment says no",
    async () => {
      const fake = fakeCli();
      const sandbox = async (options: ClaudeCodeAgentOptions) => {
        await new ClaudeCodeAgent({ ...options, env: { ...fake.env, ...options.env } }).generate({ prompt: "p" });
        return fake.record().env.IS_SANDBOX;
      };
      const inherited = process.env.IS_SANDBOX;
      delete process.env.IS_SANDBOX;
      try {
        expect(await sandbox({})).toBe("1");
        expect(await sandbox({ permissionMode: "bypassPermissions" })).toBe("1");
        expect(await sandbox({ env: { IS_SANDBOX: "yes" } })).toBe("1");
        // Not skipping permissions: nothing to allow.
        expect(await sandbox({ yolo: false })).toBeUndefined();
        expect(await sandbox({ permissionMode: "acceptEdits" })).toBeUndefined();
        // The user's no stands (Claude Code then refuses: AGENT_ROOT_REFUSED).
        expect(await sandbox({ env: { IS_SANDBOX: "0" } })).toBe("0");
        process.env.IS_SANDBOX = "false";
        expect(await sandbox({})).toBe("false");
      } finally {
        if (inherited === undefined) delete process.env.IS_SANDBOX;
        else process.env.IS_SANDBOX = inherited;
      }
    },
  );

  test("runs in its own cwd option rather than the call's", async () => {
    const fake = fakeCli();
    const other = fakeCli();
    await new ClaudeCodeAgent({ env: fake.env, cwd: other.dir }).generate({ prompt: "p", cwd: fake.dir });
    expect(fake.record().cwd).toBe(other.dir);
  });

  test("refuses an option it has no flag for, and two different system prompts, with INVALID_OPTION", () => {
    const unknown = errorOf(() => new ClaudeCodeAgent({ jsonSchema: "{}" } as never));
    expect(SmithersError.is(unknown, "INVALID_OPTION")).toBe(true);
    expect(unknown.message).toContain('"jsonSchema"');
    expect(
      SmithersError.is(
        errorOf(() => new ClaudeCodeAgent({ systemPrompt: "a", instructions: "b" })),
        "INVALID_OPTION",
      ),
    ).toBe(true);
    expect(
      SmithersError.is(
        errorOf(() => new ClaudeCodeAgent({ timeoutMs: -1 })),
        "INVALID_OPTION",
      ),
    ).toBe(true);
  });

  test("its id is the option's, else 'claude'", () => {
    expect(new ClaudeCodeAgent({ id: "reviewer" }).id).toBe("reviewer");
    expect(new ClaudeCodeAgent().id).toBe("claude");
  });
});
