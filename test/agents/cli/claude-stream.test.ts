/**
 * How ClaudeCodeAgent reads Claude Code's stream: the lines here are trimmed copies of what the
 * real CLI (2.1.332) printed against the fake Anthropic server, replayed by a small script in
 * place of the CLI, so each failure kind is checked without the real binary.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ClaudeCodeAgent } from "../../../src/agents/index.ts";
import { SmithersError } from "../../../src/errors/index.ts";
import { rejection, tempDir } from "../../helpers.ts";
import { listeners } from "./fake-cli.ts";

type Line = Record<string, unknown>;

const SESSION = "2b0e0cf4-claude";
const init: Line = { type: "system", subtype: "init", session_id: SESSION, model: "claude-sonnet-4-5", permissionMode: "bypassPermissions" };
const retry = (status: number, error: string, attempt = 1, delay = 1046): Line => ({
  type: "system",
  subtype: "api_retry",
  attempt,
  max_retries: 10,
  retry_delay_ms: delay,
  error_status: status,
  error,
  session_id: SESSION,
});
/** The made-up assistant message Claude Code prints for a failed request, and its error result. */
const apiError = (status: number, type: string, error: string, text: string): Line[] => [
  {
    type: "assistant",
    message: { model: "<synthetic>", role: "assistant", content: [{ type: "text", text }] },
    session_id: SESSION,
    error,
    is_api_error_message: true,
    api_error_status: status,
    api_error_type: type,
  },
  {
    type: "result",
    subtype: "success",
    is_error: true,
    result: text,
    api_error_status: status,
    api_error_type: type,
    total_cost_usd: 0,
    usage: { input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 },
    modelUsage: {},
    session_id: SESSION,
  },
];
const answer = (model: string, text: string, parent: string | null = null): Line => ({
  type: "assistant",
  message: { model, role: "assistant", content: [{ type: "text", text }] },
  parent_tool_use_id: parent,
  session_id: SESSION,
});
const success = (text: string, cost: number, modelUsage: Record<string, Line>): Line => ({
  type: "result",
  subtype: "success",
  is_error: false,
  result: text,
  total_cost_usd: cost,
  usage: { input_tokens: 400, cache_creation_input_tokens: 0, cache_read_input_tokens: 100, output_tokens: 50 },
  modelUsage,
  session_id: SESSION,
});

/** An executable that prints `lines`, then `stderr`, then hangs (`hang`) or exits with `exitCode`. */
function scriptedClaude(lines: Line[], options: { stderr?: string; exitCode?: number; hang?: boolean } = {}): string {
  const dir = tempDir();
  const data = join(dir, "stream.jsonl");
  writeFileSync(data, lines.map((l) => `${JSON.stringify(l)}\n`).join(""));
  const path = join(dir, "claude");
  const stderr = options.stderr ? `printf '%s\\n' '${options.stderr.replaceAll("'", "'\\''")}' >&2\n` : "";
  writeFileSync(path, `#!/bin/sh\ncat > /dev/null\ncat '${data}'\n${stderr}${options.hang ? "exec sleep 60\n" : `exit ${options.exitCode ?? 0}\n`}`);
  chmodSync(path, 0o755);
  return path;
}

const run = (binary: string, onEvent?: Parameters<ClaudeCodeAgent["generate"]>[0]["onEvent"]) =>
  new ClaudeCodeAgent({ binary, apiKey: "sk-test", timeoutMs: 20_000 }).generate({ prompt: "p", onEvent });

describe("ClaudeCodeAgent reading Claude Code's failures", () => {
  test("the first retry line of a refused key ends the call at once with AGENT_AUTH_FAILED (Claude Code would retry for minutes)", async () => {
    const started = performance.now();
    const error = await rejection(run(scriptedClaude([init, retry(401, "authentication_failed")], { hang: true })));
    expect(SmithersError.is(error, "AGENT_AUTH_FAILED")).toBe(true);
    expect(error.message).toContain("401");
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  test("a refused key reported at once (an error message and result, exit 1) is AGENT_AUTH_FAILED; so is a 403", async () => {
    const refused = await rejection(
      run(scriptedClaude([init, ...apiError(401, "authentication_error", "authentication_failed", "Invalid API key · Fix external API key")], { exitCode: 1 })),
    );
    expect(SmithersError.is(refused, "AGENT_AUTH_FAILED")).toBe(true);
    const forbidden = await rejection(
      run(scriptedClaude([init, ...apiError(403, "permission_error", "authentication_failed", "Failed to authenticate. API Error: 403")], { exitCode: 1 })),
    );
    expect(SmithersError.is(forbidden, "AGENT_AUTH_FAILED")).toBe(true);
  });

  test("rate-limit retries are left to Claude Code; when it gives up the call is AGENT_RATE_LIMITED with its last retry delay as retryAfterMs", async () => {
    const lines = [
      init,
      retry(429, "rate_limit", 1, 1046),
      retry(429, "rate_limit", 2, 2300),
      ...apiError(429, "rate_limit_error", "rate_limit", "API Error: Request rejected (429)"),
    ];
    const error = await rejection(run(scriptedClaude(lines, { exitCode: 1 })));
    expect(SmithersError.is(error, "AGENT_RATE_LIMITED")).toBe(true);
    expect(error.details).toMatchObject({ retryAfterMs: 2300, exitCode: 1 });
  });

  test("a rate-limit retry followed by an answer is a success", async () => {
    const reply = await run(scriptedClaude([init, retry(429, "rate_limit"), answer("claude-sonnet-4-5", "done"), success("done", 0.001, {})]));
    expect(reply.text).toBe("done");
  });

  test("an unknown model (404) is AGENT_MODEL_NOT_FOUND", async () => {
    const lines = [init, ...apiError(404, "not_found_error", "model_not_found", "There's an issue with the selected model (claude-nope).")];
    const error = await rejection(run(scriptedClaude(lines, { exitCode: 1 })));
    expect(SmithersError.is(error, "AGENT_MODEL_NOT_FOUND")).toBe(true);
    expect(error.message).toContain("claude-nope");
  });

  test("a refusal to skip permissions as root is AGENT_ROOT_REFUSED", async () => {
    const error = await rejection(
      run(scriptedClaude([], { stderr: "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons", exitCode: 1 })),
    );
    expect(SmithersError.is(error, "AGENT_ROOT_REFUSED")).toBe(true);
  });

  test("a server error it gave up on stays AGENT_CLI_EXIT (retryable)", async () => {
    const lines = [init, retry(529, "overloaded"), ...apiError(529, "overloaded_error", "server_error", "API Error: 529 Overloaded.")];
    const error = await rejection(run(scriptedClaude(lines, { exitCode: 1 })));
    expect(SmithersError.is(error, "AGENT_CLI_EXIT")).toBe(true);
  });
});

describe("ClaudeCodeAgent reading Claude Code's partial messages", () => {
  test("text is reported as its deltas arrive and not again with the whole message; tool calls come from the whole message", async () => {
    const l = listeners();
    const event = (e: Line): Line => ({ type: "stream_event", event: e, parent_tool_use_id: null, session_id: SESSION });
    const delta = (text: string) => event({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text } });
    const lines = [
      init,
      event({ type: "message_start", message: { id: "msg_1", model: "claude-sonnet-4-5", content: [] } }),
      event({ type: "content_block_start", index: 0, content_block: { type: "tool_use", id: "toolu_1", name: "Bash", input: {} } }),
      event({ type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: '{"command":"ls"}' } }),
      {
        type: "assistant",
        message: { id: "msg_1", model: "claude-sonnet-4-5", content: [{ type: "tool_use", id: "toolu_1", name: "Bash", input: { command: "ls" } }] },
      },
      event({ type: "message_start", message: { id: "msg_2", model: "claude-sonnet-4-5", content: [] } }),
      delta('{"files"'),
      delta(": 1}"),
      { type: "assistant", message: { id: "msg_2", model: "claude-sonnet-4-5", content: [{ type: "text", text: '{"files": 1}' }] } },
      success('{"files": 1}', 0.001, {}),
    ];
    const reply = await run(scriptedClaude(lines), l.onEvent);
    expect(reply.text).toBe('{"files": 1}');
    expect(l.events.filter((e) => e.type === "text" || e.type === "tool-call")).toEqual([
      { type: "tool-call", toolName: "Bash", callId: "toolu_1", input: { command: "ls" } },
      { type: "text", text: '{"files"' },
      { type: "text", text: ": 1}" },
    ]);
  });
});

describe("ClaudeCodeAgent reading Claude Code's usage", () => {
  test("the model recorded is the one that answered the main conversation, not the one asked for, a sub-agent's or the CLI's made-up one", async () => {
    const l = listeners();
    const lines = [
      init,
      answer("claude-haiku-4-5", "sub-agent work", "toolu_task_1"),
      answer("claude-sonnet-4-5-20250929", "{}"),
      success("{}", 0.00228, { "claude-sonnet-4-5": { costUSD: 0.00228, costBasis: "list" } }),
    ];
    const reply = await run(scriptedClaude(lines), l.onEvent);
    expect(reply.usage).toEqual({ inputTokens: 500, cachedInputTokens: 100, outputTokens: 50, costUsd: 0.00228, model: "claude-sonnet-4-5-20250929" });
  });

  test("a cost Claude Code guessed for a model missing from its price list (costBasis unknown) is no cost: left for the workflow's pricing", async () => {
    const lines = [init, answer("claude-fake-1", "{}"), success("{}", 0.00302, { "claude-fake-1": { costUSD: 0.00302, costBasis: "unknown" } })];
    const reply = await run(scriptedClaude(lines));
    expect(reply.usage).toEqual({ inputTokens: 500, cachedInputTokens: 100, outputTokens: 50, model: "claude-fake-1" });
  });
});
