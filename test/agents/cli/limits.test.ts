import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { ClaudeCodeAgent, CodexAgent, GeminiAgent, OpenCodeAgent } from "../../../src/agents/index.ts";
import { groupMembers, processAlive } from "../../../src/agents/cli/index.ts";
import { SmithersError } from "../../../src/errors/index.ts";
import { rejection } from "../../helpers.ts";
import { fakeCli, listeners, until } from "./fake-cli.ts";

describe("CLI agents' time limits and abort", () => {
  test("a hanging CLI is ended with its whole group at the call's total timeout: AGENT_TIMEOUT, grandchild gone", async () => {
    const fake = fakeCli("hang-with-grandchild");
    const started = performance.now();
    const error = await rejection(new ClaudeCodeAgent({ env: fake.env }).generate({ prompt: "p", timeout: 400 }));
    expect(SmithersError.is(error, "AGENT_TIMEOUT")).toBe(true);
    expect(error.details).toMatchObject({ limit: "total", ms: 400 });
    expect(performance.now() - started).toBeLessThan(2500);
    const { pid, grandchild } = fake.pids();
    expect(processAlive(pid)).toBe(false);
    expect(processAlive(grandchild!)).toBe(false);
    expect(groupMembers(pid)).toEqual([]);
  });

  test("the idle limit ends a CLI that stops printing, even within its total limit", async () => {
    const fake = fakeCli("hang");
    const error = await rejection(new GeminiAgent({ env: fake.env }).generate({ prompt: "p", timeout: { totalMs: 10_000, idleMs: 300 } }));
    expect(SmithersError.is(error, "AGENT_TIMEOUT")).toBe(true);
    expect(error.details).toMatchObject({ limit: "idle", ms: 300 });
    expect(groupMembers(fake.pids().pid)).toEqual([]);
  });

  test("output keeps the idle limit from firing; the total limit still ends the call", async () => {
    const fake = fakeCli("chatty-hang");
    const error = await rejection(new OpenCodeAgent({ env: fake.env }).generate({ prompt: "p", timeout: { totalMs: 600, idleMs: 250 } }));
    expect(error.details).toMatchObject({ limit: "total", ms: 600 });
  });

  test("timeoutMs and idleTimeoutMs are the defaults of a call without its own timeout", async () => {
    const total = await rejection(new CodexAgent({ env: fakeCli("chatty-hang").env, timeoutMs: 300 }).generate({ prompt: "p" }));
    expect(total.details).toMatchObject({ limit: "total", ms: 300 });
    const idle = await rejection(new CodexAgent({ env: fakeCli("hang").env, timeoutMs: 10_000, idleTimeoutMs: 250 }).generate({ prompt: "p" }));
    expect(idle.details).toMatchObject({ limit: "idle", ms: 250 });
    const overridden = await rejection(new CodexAgent({ env: fakeCli("hang").env, timeoutMs: 10_000 }).generate({ prompt: "p", timeout: 250 }));
    expect(overridden.details).toMatchObject({ limit: "total", ms: 250 });
  });

  test("abortSignal ends the whole group and rejects with the signal's reason", async () => {
    const fake = fakeCli("hang-with-grandchild");
    const controller = new AbortController();
    const reason = new Error("task cancelled");
    const l = listeners();
    const call = new ClaudeCodeAgent({ env: fake.env }).generate({ prompt: "p", abortSignal: controller.signal, onEvent: l.onEvent });
    expect(await until(() => existsSync(fake.env.FAKE_CLI_PID_FILE))).toBe(true);
    const { pid, grandchild } = fake.pids();
    expect(processAlive(grandchild!)).toBe(true);
    controller.abort(reason);
    expect(await rejection(call)).toBe(reason);
    expect(processAlive(pid)).toBe(false);
    expect(processAlive(grandchild!)).toBe(false);
    expect(l.of("process")[0]?.pid).toBe(pid);
  });

  test("what a CLI leaves running in its group when it exits is ended too", async () => {
    const fake = fakeCli("exit-leaving-grandchild");
    const reply = await new GeminiAgent({ env: fake.env }).generate({ prompt: "p" });
    expect(reply.text).toBe("Done: one file.");
    const { pid, grandchild } = fake.pids();
    expect(processAlive(grandchild!)).toBe(false);
    expect(groupMembers(pid)).toEqual([]);
  });

  test("a process that left the group but holds the CLI's stdout does not keep the call from ending", async () => {
    const fake = fakeCli("exit-leaving-escapee");
    const started = performance.now();
    try {
      const reply = await new ClaudeCodeAgent({ env: fake.env }).generate({ prompt: "p" });
      expect(reply.text).toBe("Done: one file.");
      expect(performance.now() - started).toBeLessThan(3000);
    } finally {
      const escapee = fake.pids().grandchild;
      if (escapee) process.kill(escapee, "SIGKILL");
    }
  });
});
