import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { dirname } from "node:path";
import { z } from "zod";
import { CodexAgent } from "../../../src/agents/index.ts";
import { SmithersError } from "../../../src/errors/index.ts";
import { errorOf, rejection } from "../../helpers.ts";
import { fakeCli, listeners } from "./fake-cli.ts";

/** argv with the temporary --output-last-message / --output-schema paths replaced by placeholders. */
function shape(argv: string[]): string[] {
  return argv.map((arg, i) => (argv[i - 1] === "--output-last-message" ? "<last-message>" : argv[i - 1] === "--output-schema" ? "<schema>" : arg));
}

describe("CodexAgent", () => {
  test("runs `codex exec --json` in the call's cwd with the prompt on stdin after the system prompt, bypassing approvals by default", async () => {
    const fake = fakeCli();
    await new CodexAgent({ env: fake.env, systemPrompt: "You review code." }).generate({ prompt: "Review it", cwd: fake.dir });
    const record = fake.record();
    expect(shape(record.argv)).toEqual([
      "exec",
      "--json",
      "--cd",
      fake.dir,
      "--dangerously-bypass-approvals-and-sandbox",
      "--output-last-message",
      "<last-message>",
      "-",
    ]);
    expect(record.stdin).toBe("You review code.\n\nReview it");
    expect(record.cwd).toBe(fake.dir);
  });

  test("replies with the last agent message and the turn's usage, and reports session, text, command and usage events", async () => {
    const fake = fakeCli();
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
    const fake = fakeCli();
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
      ...["-c", 'model_reasoning_effort="high"', "-c", "sandbox_workspace_write.network_access=true", "-c", "retries=3"],
      ...["-c", 'args=["-x", "a\\"b"]', "-c", 'tbl={ "a b" = 1, c = false }'],
      ...["--output-last-message", "<last-message>", "--ephemeral", "-"],
    ]);
  });

  test("yolo false passes neither the bypass nor a sandbox flag", async () => {
    const fake = fakeCli();
    await new CodexAgent({ env: fake.env, yolo: false }).generate({ prompt: "p", cwd: fake.dir });
    expect(shape(fake.record().argv)).toEqual(["exec", "--json", "--cd", fake.dir, "--output-last-message", "<last-message>", "-"]);
  });

  test("sets CODEX_HOME from configDir and CODEX_API_KEY and OPENAI_API_KEY from apiKey", async () => {
    const fake = fakeCli();
    await new CodexAgent({ env: fake.env, configDir: "/tmp/codex-home", apiKey: "sk-test" }).generate({ prompt: "p" });
    expect(fake.record().env).toMatchObject({ CODEX_HOME: "/tmp/codex-home", CODEX_API_KEY: "sk-test", OPENAI_API_KEY: "sk-test" });
  });

  test("writes the call's outputSchema as strict JSON Schema to --output-schema and replies with the parsed message as output", async () => {
    const schema = z.object({ title: z.string(), note: z.string().optional(), tags: z.array(z.object({ name: z.string(), weight: z.number().optional() })) });
    const fake = fakeCli("ok", { FAKE_CLI_TEXT: '{"title":"x","note":null,"tags":[{"name":"a","weight":null}]}' });
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
    const fake = fakeCli("ok", { FAKE_CLI_TEXT: '{"title":"x"}' });
    const reply = await new CodexAgent({ env: fake.env, nativeStructuredOutput: false }).generate({
      prompt: "p",
      outputSchema: z.object({ title: z.string() }),
    });
    expect(fake.record().argv).not.toContain("--output-schema");
    expect(reply).toEqual({ text: '{"title":"x"}', usage: { inputTokens: 120, cachedInputTokens: 100, outputTokens: 20 } });
  });

  test("removes its temporary directory after the call", async () => {
    const fake = fakeCli();
    await new CodexAgent({ env: fake.env }).generate({ prompt: "p", outputSchema: z.object({ a: z.string() }) });
    const argv = fake.record().argv;
    expect(existsSync(dirname(argv[argv.indexOf("--output-last-message") + 1]!))).toBe(false);
  });

  test("refuses a schema strict mode cannot express (open keys, a non-object top) with UNSUPPORTED_SCHEMA, before running codex", async () => {
    const fake = fakeCli();
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
});
