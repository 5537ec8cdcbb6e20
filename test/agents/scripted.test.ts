import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { scriptedAgent } from "../../src/agents/index.ts";
import { SmithersError } from "../../src/errors/index.ts";
import { rejection } from "../helpers.ts";

describe("scriptedAgent", () => {
  test("replies from the list in order, objects and arrays as JSON text", async () => {
    const agent = scriptedAgent(["plain", { a: 1 }, [1, "two"]]);
    expect(await agent.generate({ prompt: "1" })).toEqual({ text: "plain" });
    expect(await agent.generate({ prompt: "2" })).toEqual({ text: '{"a":1}' });
    expect(await agent.generate({ prompt: "3" })).toEqual({ text: '[1,"two"]' });
  });

  test("throws an Error entry instead of replying", async () => {
    const boom = new Error("boom");
    const agent = scriptedAgent([boom, "after"]);
    expect(await rejection(agent.generate({ prompt: "p" }))).toBe(boom);
    expect(await agent.generate({ prompt: "p" })).toEqual({ text: "after" });
  });

  test("throws AGENT_FAILED naming the agent once the list is exhausted", async () => {
    const agent = scriptedAgent(["only"], { id: "reviewer" });
    await agent.generate({ prompt: "p" });
    const error = await rejection(agent.generate({ prompt: "p" }));
    expect(SmithersError.is(error, "AGENT_FAILED")).toBe(true);
    expect((error as Error).message).toBe('scriptedAgent "reviewer" has no reply left for call 2: its script holds 1 replies');
  });

  test("asks a script function for each reply with the call and its 0-based index", async () => {
    const agent = scriptedAgent(async (args, callIndex) => (callIndex === 0 ? `echo ${args.prompt}` : { n: callIndex }));
    expect(await agent.generate({ prompt: "hi" })).toEqual({ text: "echo hi" });
    expect(await agent.generate({ prompt: "again" })).toEqual({ text: '{"n":1}' });
  });

  test("rejects with whatever a script function throws", async () => {
    const agent = scriptedAgent(() => {
      throw new Error("scripted failure");
    });
    expect(((await rejection(agent.generate({ prompt: "p" }))) as Error).message).toBe("scripted failure");
  });

  test("records every call's arguments, failed calls included", async () => {
    const schema = z.object({ ok: z.boolean() });
    const agent = scriptedAgent(["a"]);
    await agent.generate({ prompt: "first", outputSchema: schema });
    await rejection(agent.generate({ prompt: "second" }));
    expect(agent.calls.map((c) => c.prompt)).toEqual(["first", "second"]);
    expect(agent.calls[0]?.outputSchema).toBe(schema);
  });

  test("uses the given id, or 'scripted' by default", () => {
    expect(scriptedAgent([], { id: "x" }).id).toBe("x");
    expect(scriptedAgent([]).id).toBe("scripted");
  });

  test("waits delayMs before replying", async () => {
    const agent = scriptedAgent(["late"], { delayMs: 20 });
    const started = performance.now();
    expect(await agent.generate({ prompt: "p" })).toEqual({ text: "late" });
    expect(performance.now() - started).toBeGreaterThanOrEqual(15);
  });

  test("rejects promptly with the signal's reason when aborted during delayMs", async () => {
    const controller = new AbortController();
    const agent = scriptedAgent(["never"], { delayMs: 60_000 });
    const started = performance.now();
    const pending = agent.generate({ prompt: "p", abortSignal: controller.signal });
    const reason = new Error("cancelled");
    controller.abort(reason);
    expect(await rejection(pending)).toBe(reason);
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  test("rejects without replying when the signal is already aborted", async () => {
    const controller = new AbortController();
    controller.abort("gone");
    const agent = scriptedAgent(["reply"]);
    expect(await rejection<unknown>(agent.generate({ prompt: "p", abortSignal: controller.signal }))).toBe("gone");
    expect(agent.calls).toHaveLength(1);
  });
});
