import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { type Agent, type StructuredAttempt, buildPrompt, describeSchema, generateStructured, scriptedAgent } from "../../src/agents/index.ts";
import { SmithersError } from "../../src/errors/index.ts";
import { rejection } from "../helpers.ts";

const verdict = z.object({ approved: z.boolean(), score: z.number().min(0).max(10) });

describe("buildPrompt", () => {
  test("appends JSON instructions and the schema description after a blank line", () => {
    const prompt = buildPrompt("Review the diff.", verdict);
    expect(prompt.startsWith("Review the diff.\n\n")).toBe(true);
    expect(prompt).toContain("Reply with JSON only");
    expect(prompt.endsWith(describeSchema(verdict))).toBe(true);
  });
});

describe("generateStructured", () => {
  test("a rate limit an agent threw keeps its code and its retryAfterMs, which the engine's retry reads", async () => {
    const limited: Agent = {
      generate: () => Promise.reject(new SmithersError("AGENT_RATE_LIMITED", "429", { retryAfterMs: 1500 })),
    };
    const error = await rejection<SmithersError>(generateStructured({ agent: limited, prompt: "p", schema: z.object({}) }));
    expect(error.code).toBe("AGENT_RATE_LIMITED");
    expect(error.details.retryAfterMs).toBe(1500);
  });

  test("resolves with the first reply when it is valid", async () => {
    const agent = scriptedAgent(['```json\n{"approved": true, "score": 8}\n```']);
    const result = await generateStructured({ agent, prompt: "Review.", schema: verdict });
    expect(result.value).toEqual({ approved: true, score: 8 });
    expect(result.agentIndex).toBe(0);
    expect(result.text).toContain('"score": 8');
    expect(result.attempts).toHaveLength(1);
    expect(agent.calls[0]?.prompt).toBe(buildPrompt("Review.", verdict));
    expect(agent.calls[0]?.outputSchema).toBe(verdict);
  });

  test("retries after an invalid reply, quoting the validation error in the next prompt", async () => {
    const agent = scriptedAgent([
      { approved: true, score: "high" },
      { approved: true, score: 3 },
    ]);
    const result = await generateStructured({ agent, prompt: "Review.", schema: verdict });
    expect(result.value).toEqual({ approved: true, score: 3 });
    expect(result.attempts.map((a) => a.try)).toEqual([1, 2]);
    const retryPrompt = agent.calls[1]?.prompt ?? "";
    expect(retryPrompt.startsWith(buildPrompt("Review.", verdict))).toBe(true);
    expect(retryPrompt).toContain("score: Invalid input: expected number, received string");
    expect(retryPrompt).toContain('{"approved":true,"score":"high"}');
    expect(agent.calls[0]?.prompt).not.toContain("previous reply");
  });

  test("retries after a reply with no JSON, saying so in the next prompt", async () => {
    const agent = scriptedAgent(["I approve, score eight.", { approved: true, score: 8 }]);
    const result = await generateStructured({ agent, prompt: "Review.", schema: verdict });
    expect(result.value.score).toBe(8);
    expect(result.attempts[0]?.error).toMatchObject({ code: "AGENT_REPLY_NOT_JSON" });
    expect(agent.calls[1]?.prompt).toContain("no parseable JSON");
    expect(agent.calls[1]?.prompt).toContain("I approve, score eight.");
  });

  test("rejects with INVALID_OUTPUT and all 3 attempts when no reply is ever valid (maxSchemaRetries 2)", async () => {
    const agent = scriptedAgent([{ approved: "yes" }, "no json here", { approved: true, score: 11 }], { id: "rev" });
    const error = await rejection(generateStructured({ agent, prompt: "Review.", schema: verdict, maxSchemaRetries: 2 }));
    expect(SmithersError.is(error, "INVALID_OUTPUT")).toBe(true);
    const attempts = (error as SmithersError).details.attempts as StructuredAttempt[];
    expect(attempts).toHaveLength(3);
    expect(attempts.map((a) => [a.agentIndex, a.agentId, a.try])).toEqual([
      [0, "rev", 1],
      [0, "rev", 2],
      [0, "rev", 3],
    ]);
    expect(attempts.map((a) => (a.error as { code: string }).code)).toEqual(["INVALID_OUTPUT", "AGENT_REPLY_NOT_JSON", "INVALID_OUTPUT"]);
    expect((attempts[2]!.error as { message: string }).message).toContain("score: Too big");
    expect(JSON.parse(JSON.stringify(attempts))).toEqual(attempts);
    expect(SmithersError.is((error as SmithersError).details.cause, "INVALID_OUTPUT")).toBe(true);
    expect(agent.calls).toHaveLength(3);
  });

  test("makes 1 + maxSchemaRetries calls per agent: none after the first with 0, three more by default", async () => {
    const none = scriptedAgent(() => "nope");
    const error = await rejection(generateStructured({ agent: none, prompt: "p", schema: verdict, maxSchemaRetries: 0 }));
    expect(SmithersError.is(error, "INVALID_OUTPUT")).toBe(true);
    expect(none.calls).toHaveLength(1);
    const byDefault = scriptedAgent(() => "nope");
    const failed = await rejection(generateStructured({ agent: byDefault, prompt: "p", schema: verdict }));
    expect((failed as SmithersError).details.attempts).toHaveLength(4);
    expect(byDefault.calls).toHaveLength(4);
  });

  test("a maxSchemaRetries that is not a whole number >= 0 rejects with INVALID_OPTION before any call", async () => {
    const agent = scriptedAgent(() => "nope");
    for (const bad of [-1, 1.5, Number.NaN, Infinity]) {
      const error = await rejection(generateStructured({ agent, prompt: "p", schema: verdict, maxSchemaRetries: bad }));
      expect(SmithersError.is(error, "INVALID_OPTION")).toBe(true);
    }
    expect(agent.calls).toHaveLength(0);
  });

  test("falls through to the fallback at once when the primary throws", async () => {
    const primary = scriptedAgent([new Error("rate limited")], { id: "primary" });
    const fallback = scriptedAgent([{ approved: false, score: 2 }], { id: "fallback" });
    const result = await generateStructured({ agent: [primary, fallback], prompt: "p", schema: verdict });
    expect(result.agentIndex).toBe(1);
    expect(result.value).toEqual({ approved: false, score: 2 });
    expect(primary.calls).toHaveLength(1);
    expect(result.attempts[0]).toMatchObject({ agentIndex: 0, agentId: "primary", error: { message: "rate limited" } });
    expect(result.attempts[1]).toMatchObject({ agentIndex: 1, agentId: "fallback", try: 1 });
  });

  test("moves to the fallback with a fresh prompt once the primary's retries are used up", async () => {
    const primary = scriptedAgent(() => ({ approved: "maybe" }));
    const fallback = scriptedAgent([{ approved: true, score: 5 }]);
    const result = await generateStructured({ agent: [primary, fallback], prompt: "p", schema: verdict });
    expect(result.agentIndex).toBe(1);
    expect(primary.calls).toHaveLength(4);
    expect(fallback.calls[0]?.prompt).toBe(buildPrompt("p", verdict));
    expect(result.attempts).toHaveLength(5);
  });

  test("rejects with AGENT_FAILED when the last failure was a thrown error", async () => {
    const primary = scriptedAgent(() => "not json");
    const fallback = scriptedAgent([new Error("offline")]);
    const error = await rejection(generateStructured({ agent: [primary, fallback], prompt: "p", schema: verdict }));
    expect(SmithersError.is(error, "AGENT_FAILED")).toBe(true);
    expect(((error as SmithersError).details.cause as Error).message).toBe("offline");
    expect((error as SmithersError).details.attempts).toHaveLength(5);
  });

  test("a thrown rate limit keeps its code and its retryAfterMs, the delay the engine waits before retrying", async () => {
    const limited = scriptedAgent([new SmithersError("AGENT_RATE_LIMITED", "slow down", { retryAfterMs: 1500 })]);
    const error = await rejection(generateStructured({ agent: limited, prompt: "p", schema: verdict }));
    expect(SmithersError.is(error, "AGENT_RATE_LIMITED")).toBe(true);
    expect((error as SmithersError).details.retryAfterMs).toBe(1500);
  });

  test("validates a structured output directly, ignoring the reply text", async () => {
    const agent: Agent = { id: "native", generate: async () => ({ text: "prose only", output: { approved: true, score: 1 } }) };
    const result = await generateStructured({ agent, prompt: "p", schema: verdict });
    expect(result.value).toEqual({ approved: true, score: 1 });
    expect(result.text).toBe("prose only");
  });

  test("retries when a structured output is invalid", async () => {
    const outputs = [{ approved: 1 }, { approved: true, score: 0 }];
    const prompts: string[] = [];
    const agent: Agent = {
      generate: async ({ prompt }) => {
        prompts.push(prompt);
        return { text: "", output: outputs[prompts.length - 1] };
      },
    };
    const result = await generateStructured({ agent, prompt: "p", schema: verdict });
    expect(result.value).toEqual({ approved: true, score: 0 });
    expect(prompts[1]).toContain("approved: Invalid input: expected boolean, received number");
  });

  test("returns the schema's parsed value, defaults and transforms applied", async () => {
    const schema = z.object({ n: z.string().transform(Number), tag: z.string().default("none") });
    const result = await generateStructured({ agent: scriptedAgent([{ n: "42" }]), prompt: "p", schema });
    expect(result.value).toEqual({ n: 42, tag: "none" });
  });

  test("reports each attempt to onAttempt as it finishes", async () => {
    const seen: StructuredAttempt[] = [];
    const agent = scriptedAgent(["bad", { approved: true, score: 4 }]);
    await generateStructured({ agent, prompt: "p", schema: verdict, onAttempt: (a) => seen.push(a) });
    expect(seen.map((a) => [a.try, a.error === undefined])).toEqual([
      [1, false],
      [2, true],
    ]);
  });

  test("rejects with the abort reason and calls no further agent when aborted mid-call", async () => {
    const controller = new AbortController();
    const reason = new Error("user cancelled");
    const hanging: Agent = {
      generate: () => {
        queueMicrotask(() => controller.abort(reason));
        return new Promise(() => {});
      },
    };
    const fallback = scriptedAgent([{ approved: true, score: 1 }]);
    const error = await rejection(generateStructured({ agent: [hanging, fallback], prompt: "p", schema: verdict, signal: controller.signal }));
    expect(error).toBe(reason);
    expect(fallback.calls).toHaveLength(0);
  });

  test("rejects with the abort reason when aborted while the agent is still waiting", async () => {
    const controller = new AbortController();
    const primary = scriptedAgent(["{}"], { delayMs: 60_000 });
    const fallback = scriptedAgent([{ approved: true, score: 1 }]);
    const pending = generateStructured({ agent: [primary, fallback], prompt: "p", schema: verdict, signal: controller.signal });
    controller.abort("stop");
    expect(await rejection<unknown>(pending)).toBe("stop");
    expect(fallback.calls).toHaveLength(0);
  });

  test("calls no agent when the signal is already aborted", async () => {
    const controller = new AbortController();
    controller.abort(new Error("too late"));
    const agent = scriptedAgent([{ approved: true, score: 1 }]);
    const error = await rejection(generateStructured({ agent, prompt: "p", schema: verdict, signal: controller.signal }));
    expect((error as Error).message).toBe("too late");
    expect(agent.calls).toHaveLength(0);
  });

  test("passes the signal through to the agent", async () => {
    const controller = new AbortController();
    const agent = scriptedAgent([{ approved: true, score: 1 }]);
    await generateStructured({ agent, prompt: "p", schema: verdict, signal: controller.signal });
    expect(agent.calls[0]?.abortSignal).toBe(controller.signal);
  });

  test("rejects an empty agent list with INVALID_WORKFLOW", async () => {
    const error = await rejection(generateStructured({ agent: [], prompt: "p", schema: verdict }));
    expect(SmithersError.is(error, "INVALID_WORKFLOW")).toBe(true);
  });
});
