import { describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { z } from "zod";
import { type AgentUsage, CodexAgent } from "../../../src/agents/index.ts";
import { CodexStreamParser } from "../../../src/agents/cli/codex-stream.ts";
import { SmithersError } from "../../../src/errors/index.ts";
import { errorOf, rejection } from "../../helpers.ts";
import { fakeCli, listeners } from "./fake-cli.ts";

/** argv with the temporary --output-last-message / --output-schema paths replaced by placeholders. */
function shape(argv: string[]): string[] {
  return argv.map((arg, i) => (argv[i - 1] === "--output-last-message" ? "<last-message>" : argv[i - 1] === "--output-schema" ? "<schema>" : arg));
}

/** The fake CLI with an empty CODEX_HOME, so that this machine's ~/.codex/config.toml cannot change the argv. */
function codexFake(scenario = "ok", extra: Record<string, string> = {}) {
  const home = mkdtempSync(join(tmpdir(), "smithers-codex-home-"));
  return { ...fakeCli(scenario, { CODEX_HOME: home, ...extra }), home };
}

/** The model a reply's usage names. */
const modelOf = (reply: { usage?: unknown }) => (reply.usage as AgentUsage | undefined)?.model;

/** The settings that keep an offline Codex from phoning home, passed when the user set neither. */
const QUIET = ["-c", "analytics.enabled=false", "-c", "features.plugins=false"];

describe("CodexAgent", () => {
  test("runs `codex exec --json` in the call's cwd with the prompt on stdin after the system prompt, bypassing approvals by default", async () => {
    const fake = codexFake();
    await new CodexAgent({ env: fake.env, systemPrompt: "You review code." }).generate({ prompt: "Review it", cwd: fake.dir });
    const record = fake.record();
    expect(shape(record.argv)).toEqual([
      "exec",
      "--json",
      "--cd",
      fake.dir,
      "--dangerously-bypass-approvals-and-sandbox",
      ...QUIET,
      "--output-last-message",
      "<last-message>",
      "-",
    ]);
    expect(record.stdin).toBe("You review code.\n\nReview it");
    expect(record.cwd).toBe(fake.dir);
  });

  test("replies with the last agent message and the turn's usage, and reports session, text, command and usage events", async () => {
    const fake = codexFake();
    const l = listeners();
    const reply = await new CodexAgent({ env: fake.env, model: "gpt-5-codex" }).generate({ prompt: "p", onEvent: l.onEvent });
    const usage = { inputTokens: 120, cachedInputTokens: 100, outputTokens: 20 };
    expect(reply).toEqual({ text: "Done: one file.", usage: { ...usage, model: "gpt-5-codex" } });
    expect(l.events.filter((e) => e.type !== "process")).toEqual([
      { type: "session", sessionId: "thread-1" },
      { type: "tool-call", toolName: "command_execution", callId: "item_1", input: { command: "bash -lc ls" } },
      { type: "tool-result", toolName: "command_execution", callId: "item_1", output: "README.md\n", isError: false },
      { type: "text", text: "Done: one file." },
      { type: "usage", usage },
    ]);
  });

  test("passes each option as its codex flag, config as TOML `-c key=value`, extraArgs before the final '-'", async () => {
    const fake = codexFake();
    const agent = new CodexAgent({
      env: fake.env,
      image: ["a.png", "b.png"],
      model: "gpt-5-codex",
      sandbox: "workspace-write",
      profile: "ci",
      addDir: ["../shared", "../docs"],
      skipGitRepoCheck: true,
      config: { model_reasoning_effort: "high", "sandbox_workspace_write.network_access": true, retries: 3, args: ["-x", 'a"b'], tbl: { "a b": 1, c: false } },
      extraArgs: ["--ephemeral"],
    });
    await agent.generate({ prompt: "p", cwd: fake.dir });
    expect(shape(fake.record().argv)).toEqual([
      ...["exec", "--json", "--image", "a.png", "--image", "b.png", "--cd", fake.dir],
      ...["--model", "gpt-5-codex", "--sandbox", "workspace-write", "--profile", "ci", "--add-dir", "../shared", "--add-dir", "../docs"],
      "--skip-git-repo-check",
      ...QUIET,
      ...["-c", 'model_reasoning_effort="high"', "-c", "sandbox_workspace_write.network_access=true", "-c", "retries=3"],
      ...["-c", 'args=["-x", "a\\"b"]', "-c", 'tbl={ "a b" = 1, c = false }'],
      ...["--output-last-message", "<last-message>", "--ephemeral", "-"],
    ]);
  });

  test("yolo false passes neither the bypass nor a sandbox flag", async () => {
    const fake = codexFake();
    await new CodexAgent({ env: fake.env, yolo: false }).generate({ prompt: "p", cwd: fake.dir });
    expect(shape(fake.record().argv)).toEqual(["exec", "--json", "--cd", fake.dir, ...QUIET, "--output-last-message", "<last-message>", "-"]);
  });

  test("sets CODEX_HOME from configDir and CODEX_API_KEY and OPENAI_API_KEY from apiKey", async () => {
    const fake = codexFake();
    await new CodexAgent({ env: fake.env, configDir: "/tmp/codex-home", apiKey: "sk-test" }).generate({ prompt: "p" });
    expect(fake.record().env).toMatchObject({ CODEX_HOME: "/tmp/codex-home", CODEX_API_KEY: "sk-test", OPENAI_API_KEY: "sk-test" });
  });

  test("writes the call's outputSchema as strict JSON Schema to --output-schema and replies with the parsed message as output", async () => {
    const schema = z.object({ title: z.string(), note: z.string().optional(), tags: z.array(z.object({ name: z.string(), weight: z.number().optional() })) });
    const fake = codexFake("ok", { FAKE_CLI_TEXT: '{"title":"x","note":null,"tags":[{"name":"a","weight":null}]}' });
    const reply = await new CodexAgent({ env: fake.env }).generate({ prompt: "p", outputSchema: schema });
    const record = fake.record();
    expect(shape(record.argv)).toContain("<schema>");
    expect(record.outputSchema).toEqual({
      type: "object",
      properties: {
        title: { type: "string" },
        note: { anyOf: [{ type: "string" }, { type: "null" }] },
        tags: {
          type: "array",
          items: {
            type: "object",
            properties: { name: { type: "string" }, weight: { anyOf: [{ type: "number" }, { type: "null" }] } },
            required: ["name", "weight"],
            additionalProperties: false,
          },
        },
      },
      required: ["title", "note", "tags"],
      additionalProperties: false,
    });
    expect(reply.output).toEqual({ title: "x", tags: [{ name: "a" }] });
    expect(schema.parse(reply.output)).toEqual({ title: "x", tags: [{ name: "a" }] });
  });

  test("with nativeStructuredOutput false leaves the schema to the prompt: no --output-schema, no output", async () => {
    const fake = codexFake("ok", { FAKE_CLI_TEXT: '{"title":"x"}' });
    const reply = await new CodexAgent({ env: fake.env, nativeStructuredOutput: false }).generate({
      prompt: "p",
      outputSchema: z.object({ title: z.string() }),
    });
    expect(fake.record().argv).not.toContain("--output-schema");
    expect(reply).toEqual({ text: '{"title":"x"}', usage: { inputTokens: 120, cachedInputTokens: 100, outputTokens: 20 } });
  });

  test("removes its temporary directory after the call", async () => {
    const fake = codexFake();
    await new CodexAgent({ env: fake.env }).generate({ prompt: "p", outputSchema: z.object({ a: z.string() }) });
    const argv = fake.record().argv;
    expect(existsSync(dirname(argv[argv.indexOf("--output-last-message") + 1]!))).toBe(false);
  });

  test("refuses a schema strict mode cannot express (open keys, a non-object top) with UNSUPPORTED_SCHEMA, before running codex", async () => {
    const fake = codexFake();
    const agent = new CodexAgent({ env: fake.env });
    const open = await rejection(agent.generate({ prompt: "p", outputSchema: z.object({ scores: z.record(z.string(), z.number()) }) }));
    expect(SmithersError.is(open, "UNSUPPORTED_SCHEMA")).toBe(true);
    expect(open.message).toContain("/scores");
    expect(SmithersError.is(await rejection(agent.generate({ prompt: "p", outputSchema: z.array(z.string()) })), "UNSUPPORTED_SCHEMA")).toBe(true);
    expect(existsSync(fake.env.FAKE_CLI_RECORD)).toBe(false);
  });

  test("refuses the removed --full-auto and config values TOML cannot hold with INVALID_OPTION", () => {
    expect(
      SmithersError.is(
        errorOf(() => new CodexAgent({ fullAuto: true } as never)),
        "INVALID_OPTION",
      ),
    ).toBe(true);
    expect(
      SmithersError.is(
        errorOf(() => new CodexAgent({ config: { x: null as never } })),
        "INVALID_OPTION",
      ),
    ).toBe(true);
  });

  test("passes neither quiet setting where the user's config.toml, profile, config or extraArgs set it", async () => {
    const argvWith = async (options: ConstructorParameters<typeof CodexAgent>[0], files: Record<string, string> = {}) => {
      const fake = codexFake();
      for (const [name, text] of Object.entries(files)) writeFileSync(join(fake.home, name), text);
      await new CodexAgent({ env: fake.env, ...options }).generate({ prompt: "p", cwd: fake.dir });
      return fake.record().argv.filter((arg, i, all) => all[i - 1] === "-c" && /^(analytics|features)/.test(arg));
    };
    expect(await argvWith({}, { "config.toml": "[analytics]\nenabled = true\n" })).toEqual(["features.plugins=false"]);
    expect(await argvWith({}, { "config.toml": 'profile = "work"\n[profiles.work.features]\nplugins = true\n' })).toEqual(["analytics.enabled=false"]);
    expect(await argvWith({ profile: "ci" }, { "ci.config.toml": "analytics = { enabled = true }\n" })).toEqual(["features.plugins=false"]);
    expect(await argvWith({ config: { analytics: { enabled: true } } })).toEqual(["features.plugins=false", "analytics={ enabled = true }"]);
    expect(await argvWith({ extraArgs: ["--enable", "plugins", "-c", "analytics.enabled=true"] })).toEqual(["analytics.enabled=true"]);
    expect(await argvWith({}, { "config.toml": "not toml = = =" })).toEqual(QUIET.filter((a) => a !== "-c"));
  });

  test("records the model Codex asks for: the model option, else -c model or config.toml's", async () => {
    const fromToml = codexFake();
    writeFileSync(join(fromToml.home, "config.toml"), 'model = "gpt-from-toml"\n');
    expect(modelOf(await new CodexAgent({ env: fromToml.env }).generate({ prompt: "p" }))).toBe("gpt-from-toml");
    expect(modelOf(await new CodexAgent({ env: fromToml.env, config: { model: "gpt-from-config" } }).generate({ prompt: "p" }))).toBe("gpt-from-config");
    expect(modelOf(await new CodexAgent({ env: fromToml.env, model: "gpt-option", config: { model: "x" } }).generate({ prompt: "p" }))).toBe("gpt-option");
    expect((await new CodexAgent({ env: codexFake().env }).generate({ prompt: "p" })).usage).toEqual({
      inputTokens: 120,
      cachedInputTokens: 100,
      outputTokens: 20,
    });
  });
});

describe("CodexStreamParser", () => {
  const feed = (...records: Record<string, unknown>[]) => {
    const parser = new CodexStreamParser(1024);
    const stops = records.map((r) => {
      parser.record(r, () => {});
      return parser.stopNow();
    });
    return { stops, outcome: parser.outcome() };
  };
  const retry = (why: string) => ({ type: "error", message: `Reconnecting... 1/5 (${why})` });
  const failed = (message: string) => [
    { type: "error", message },
    { type: "turn.failed", error: { message } },
  ];

  test("a retry notice for a refused key (401, 403) stops the call at once as AGENT_AUTH_FAILED", () => {
    for (const status of ["401 Unauthorized", "403 Forbidden"]) {
      const { stops, outcome } = feed({ type: "turn.started" }, retry(`unexpected status ${status}: Bad key., url: http://x/v1/responses, request id: r1`));
      expect(stops).toEqual([false, true]);
      expect(outcome.failure?.code).toBe("AGENT_AUTH_FAILED");
      expect(outcome.failure?.message).toContain(status);
    }
  });

  test("a rate limit Codex retries itself does not stop the call; one it gave up on is AGENT_RATE_LIMITED", () => {
    const rate = "exceeded retry limit, last status: 429 Too Many Requests, request id: r1";
    expect(feed(retry(rate)).stops).toEqual([false]);
    expect(feed(retry(rate), ...failed(rate)).outcome.failure?.code).toBe("AGENT_RATE_LIMITED");
    expect(feed(...failed("Quota exceeded. Check your plan and billing details.")).outcome.failure?.code).toBe("AGENT_RATE_LIMITED");
  });

  test("an unknown model is AGENT_MODEL_NOT_FOUND; Codex's missing-metadata warning is not", () => {
    const metadata = {
      type: "item.completed",
      item: { id: "i0", type: "error", message: "Model metadata for `m` not found. Defaulting to fallback metadata" },
    };
    const ok = feed(metadata, { type: "turn.completed", usage: { input_tokens: 1, output_tokens: 1 } }).outcome;
    expect(ok).toMatchObject({ complete: true });
    expect(ok.failure).toBeUndefined();
    const missing = feed(metadata, ...failed("The model `m` does not exist or you do not have access to it.")).outcome;
    expect(missing.failure?.code).toBe("AGENT_MODEL_NOT_FOUND");
    expect(feed(...failed("stream disconnected before completion")).outcome.failure).toBeUndefined();
  });

  test("a rerouted model is the usage's model: the one that answered", () => {
    const { outcome } = feed(
      { type: "item.completed", item: { id: "i1", type: "error", message: "model rerouted: gpt-asked -> gpt-answered (HighRiskCyberActivity)" } },
      { type: "turn.completed", usage: { input_tokens: 10, cached_input_tokens: 4, output_tokens: 2 } },
    );
    expect(outcome.usage).toEqual({ inputTokens: 10, cachedInputTokens: 4, outputTokens: 2, model: "gpt-answered" });
  });
});
