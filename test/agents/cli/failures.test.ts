import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { ClaudeCodeAgent, CodexAgent, GeminiAgent, OpenCodeAgent, retryableAgentError } from "../../../src/agents/index.ts";
import { SmithersError } from "../../../src/errors/index.ts";
import { rejection } from "../../helpers.ts";
import { fakeCli, listeners } from "./fake-cli.ts";

const AGENTS: [string, (env: Record<string, string>) => Pick<ClaudeCodeAgent, "generate">][] = [
  ["ClaudeCodeAgent", (env) => new ClaudeCodeAgent({ env })],
  ["CodexAgent", (env) => new CodexAgent({ env })],
  ["GeminiAgent", (env) => new GeminiAgent({ env })],
  ["OpenCodeAgent", (env) => new OpenCodeAgent({ env })],
];

describe.each(AGENTS)("%s", (_name, make) => {
  test("throws AGENT_AUTH_FAILED when the CLI reports a refused login", async () => {
    const error = await rejection(make(fakeCli("auth-error").env).generate({ prompt: "p" }));
    expect(SmithersError.is(error, "AGENT_AUTH_FAILED")).toBe(true);
    expect(retryableAgentError(String(error.code))).toBe(false);
  });

  test("throws AGENT_CLI_EXIT with the exit code and the CLI's own error when it fails otherwise", async () => {
    const error = await rejection(make(fakeCli("error-result").env).generate({ prompt: "p" }));
    expect(SmithersError.is(error, "AGENT_CLI_EXIT")).toBe(true);
    expect(error.details).toMatchObject({ exitCode: 1, signal: null });
    expect(error.message).toMatch(/overloaded|disconnected/);
  });

  test("throws AGENT_CLI_CRASHED (retryable) with the stderr tail after partial output then a crash, the partial events delivered", async () => {
    const l = listeners();
    const error = await rejection(make(fakeCli("partial-then-crash").env).generate({ prompt: "p", onEvent: l.onEvent, onStderr: l.onStderr }));
    expect(SmithersError.is(error, "AGENT_CLI_CRASHED")).toBe(true);
    expect(retryableAgentError("AGENT_CLI_CRASHED")).toBe(true);
    expect(error.details).toMatchObject({ exitCode: 3, stderrTail: "panic: the CLI fell over\n" });
    expect(error.message).toContain("panic: the CLI fell over");
    expect(l.of("process")).toHaveLength(1);
    expect(l.events.length).toBeGreaterThan(1);
    expect(l.out.stderr).toContain("panic");
  });

  test("throws AGENT_CLI_CRASHED, retryable, when the CLI is killed by a signal Smithers did not send", async () => {
    const error = await rejection(make(fakeCli("partial-then-signal").env).generate({ prompt: "p" }));
    expect(SmithersError.is(error, "AGENT_CLI_CRASHED")).toBe(true);
    expect(error.details).toMatchObject({ exitCode: null, signal: "SIGSEGV" });
    expect(retryableAgentError(String(error.code))).toBe(true);
  });

  test("throws AGENT_STREAM_MALFORMED when it exits 0 with no JSON stream, or without its final result", async () => {
    const garbage = await rejection(make(fakeCli("garbage").env).generate({ prompt: "p" }));
    expect(SmithersError.is(garbage, "AGENT_STREAM_MALFORMED")).toBe(true);
    expect(garbage.details).toMatchObject({ malformedLines: 2, records: 0 });
    const cut = await rejection(make(fakeCli("no-result").env).generate({ prompt: "p" }));
    expect(SmithersError.is(cut, "AGENT_STREAM_MALFORMED")).toBe(true);
  });

  test("skips lines that are not JSON records among good ones, noting each on onStderr, and still replies", async () => {
    const l = listeners();
    const reply = await make(fakeCli("malformed-lines").env).generate({ prompt: "p", onStdout: l.onStdout, onStderr: l.onStderr });
    expect(reply.text).toBe("Done: one file.");
    expect(l.out.stdout).toContain("this is not json {\n");
    expect(l.out.stderr).toContain("skipped a stdout line that is not a JSON record: this is not json {");
    expect(l.out.stderr).toContain("skipped a stdout line that is not a JSON record: [1, 2, 3]");
  });

  test("throws AGENT_CLI_NOT_FOUND, never retried, when the executable is not on PATH", async () => {
    const error = await rejection(make({ PATH: "/nonexistent" }).generate({ prompt: "p" }));
    expect(SmithersError.is(error, "AGENT_CLI_NOT_FOUND")).toBe(true);
    expect(retryableAgentError("AGENT_CLI_NOT_FOUND")).toBe(false);
  });
});

describe("CLI agents", () => {
  test("a `binary` option names the executable, on PATH or as a path", async () => {
    const fake = fakeCli();
    const reply = await new GeminiAgent({ env: fake.env, binary: join(import.meta.dir, "../../fixtures/fake-cli/gemini") }).generate({ prompt: "p" });
    expect(reply.text).toBe("Done: one file.");
    const missing = await rejection(new GeminiAgent({ env: fake.env, binary: "./no-such-cli" }).generate({ prompt: "p", cwd: fake.dir }));
    expect(SmithersError.is(missing, "AGENT_CLI_NOT_FOUND")).toBe(true);
    expect(missing.message).toContain("./no-such-cli");
  });

  test("throws AGENT_FAILED when the stream reports an error but the CLI exits 0", async () => {
    const error = await rejection(new GeminiAgent({ env: fakeCli("error-result", { FAKE_CLI_EXIT: "0" }).env }).generate({ prompt: "p" }));
    expect(SmithersError.is(error, "AGENT_FAILED")).toBe(true);
    expect(error.message).toContain("the model is overloaded");
  });

  test("a gemini exit code 41 is an auth failure even with nothing on its stream", async () => {
    const error = await rejection(new GeminiAgent({ env: fakeCli("auth-error").env }).generate({ prompt: "p" }));
    expect(SmithersError.is(error, "AGENT_AUTH_FAILED")).toBe(true);
    expect(error.details).toMatchObject({ exitCode: 41 });
  });

  test("reports the process first: its pid, the command line and the kernel start time", async () => {
    const fake = fakeCli();
    const l = listeners();
    let startTimeSeen: string | undefined;
    await new ClaudeCodeAgent({ env: fake.env, model: "opus" }).generate({
      prompt: "p",
      onEvent: (event) => {
        l.onEvent(event);
        if (event.type === "process") startTimeSeen = event.startTime;
      },
    });
    const [first] = l.events;
    expect(first).toMatchObject({
      type: "process",
      command: "claude -p --output-format stream-json --verbose --include-partial-messages --model opus --dangerously-skip-permissions",
    });
    expect(first?.type === "process" && first.pid).toBe(fake.pids().pid);
    expect(startTimeSeen).toMatch(/^\d+$/);
  });

  test("forwards the raw stdout and stderr chunks", async () => {
    const l = listeners();
    await rejection(new CodexAgent({ env: fakeCli("partial-then-crash").env }).generate({ prompt: "p", onStdout: l.onStdout, onStderr: l.onStderr }));
    expect(l.out.stdout).toBe('{"type":"thread.started","thread_id":"thread-1"}\n{"type":"turn.started"}\n');
    expect(l.out.stderr).toBe("panic: the CLI fell over\n");
  });

  test("keeps at most maxOutputBytes of reply text", async () => {
    const fake = fakeCli("ok", { FAKE_CLI_TEXT: "x".repeat(5000) });
    const reply = await new GeminiAgent({ env: fake.env, maxOutputBytes: 2000 }).generate({ prompt: "p" });
    expect(reply.text).toBe("x".repeat(2000));
  });

  test("drops a stdout line longer than maxOutputBytes: a result line that big leaves AGENT_STREAM_MALFORMED", async () => {
    const fake = fakeCli("ok", { FAKE_CLI_TEXT: "x".repeat(5000) });
    const l = listeners();
    const error = await rejection(new ClaudeCodeAgent({ env: fake.env, maxOutputBytes: 2000 }).generate({ prompt: "p", onStderr: l.onStderr }));
    expect(SmithersError.is(error, "AGENT_STREAM_MALFORMED")).toBe(true);
    expect(l.out.stderr).toContain("a line longer than maxOutputBytes 2000");
  });

  test("a callback that throws ends the call with that error", async () => {
    const boom = new Error("listener failed");
    const error = await rejection(
      new ClaudeCodeAgent({ env: fakeCli().env }).generate({
        prompt: "p",
        onEvent: (event) => {
          if (event.type === "text") throw boom;
        },
      }),
    );
    expect(error).toBe(boom);
  });

  test("retryableAgentError: a bad option or schema fails the same way every time; a timeout or a crash may pass", () => {
    expect(retryableAgentError("AGENT_TIMEOUT")).toBe(true);
    expect(retryableAgentError("AGENT_CLI_EXIT")).toBe(true);
    expect(retryableAgentError("AGENT_AUTH_FAILED")).toBe(false);
    expect(retryableAgentError("INVALID_OPTION")).toBe(false);
    expect(retryableAgentError("UNSUPPORTED_SCHEMA")).toBe(false);
  });

  test("an already aborted signal rejects with its reason without starting the CLI", async () => {
    const fake = fakeCli();
    const reason = new Error("cancelled before start");
    const error = await rejection(new ClaudeCodeAgent({ env: fake.env }).generate({ prompt: "p", abortSignal: AbortSignal.abort(reason) }));
    expect(error).toBe(reason);
    expect(existsSync(fake.env.FAKE_CLI_RECORD)).toBe(false);
  });
});
