/**
 * An AI SDK agent is streamed: its text, tool calls and tool results become NodeOutput events
 * while the model is still answering, and the reply (structured output, usage, the answering
 * model, errors, abort) is what `generate` gave. A model that cannot stream is called with
 * `generate`.
 */
import { afterEach, describe, expect, spyOn, test } from "bun:test";
import { APICallError, Output, ToolLoopAgent, UnsupportedFunctionalityError } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { z } from "zod";
import { eventsCommand } from "../../src/cli/events.ts";
import { createSmithers, defineTool, runWorkflow, type SmithersEvent } from "../../src/index.ts";
import { gate, streamingModel, type StreamStep } from "../support/streaming-model.ts";
import { sql, tempDbPath } from "../helpers.ts";

const review = z.object({ approved: z.boolean(), notes: z.string() });

const lookup = defineTool({
  name: "lookup",
  description: "Look up a file's owner",
  schema: z.object({ file: z.string() }),
  execute: async () => ({ owner: "ada" }),
});

/** A one-task workflow on a fresh database whose task asks `agent`. */
function oneTask(agent: unknown, task: { timeoutMs?: number; retries?: number } = {}) {
  const dbPath = tempDbPath();
  const { smithers, Workflow, Task, outputs } = createSmithers({ review }, { dbPath });
  const wf = smithers(() => (
    <Workflow name="live">
      <Task id="review" output={outputs.review} agent={agent as never} {...task}>
        Review the change.
      </Task>
    </Workflow>
  ));
  return { dbPath, wf };
}

/** Resolves with the first event `pick` accepts, as the run emits it. */
function waitFor(events: SmithersEvent[], listeners: ((e: SmithersEvent) => void)[], pick: (e: SmithersEvent) => boolean): Promise<SmithersEvent> {
  const seen = events.find(pick);
  if (seen) return Promise.resolve(seen);
  return new Promise((resolve) => listeners.push((e) => pick(e) && resolve(e)));
}

function follow() {
  const events: SmithersEvent[] = [];
  const listeners: ((e: SmithersEvent) => void)[] = [];
  const onEvent = (e: SmithersEvent) => {
    events.push(e);
    for (const l of listeners) l(e);
  };
  const outputOf = (e: SmithersEvent) => (e.type === "NodeOutput" ? [[e.stream, e.text]] : []);
  return { events, onEvent, outputs: () => events.flatMap(outputOf), until: (pick: (e: SmithersEvent) => boolean) => waitFor(events, listeners, pick) };
}

/** The stored NodeOutput events as [stream, text], adjacent text joined (how pieces split across flushes is agent-output's concern). */
const storedOutputs = (dbPath: string) =>
  sql<{ payload_json: string }>(dbPath, "SELECT payload_json FROM _smithers_events WHERE type = 'NodeOutput' ORDER BY seq").reduce<string[][]>((all, r) => {
    const p = JSON.parse(r.payload_json) as { stream: string; text: string };
    const last = all.at(-1);
    if (p.stream === "text" && last?.[0] === "text") last[1] += p.text;
    else all.push([p.stream, p.text]);
    return all;
  }, []);

const attemptState = (dbPath: string) => sql<{ state: string }>(dbPath, "SELECT state FROM _smithers_attempts").map((r) => r.state);

let consoleError: ReturnType<typeof spyOn> | undefined;
afterEach(() => consoleError?.mockRestore());

describe("an AI SDK agent's output while it runs", () => {
  test("text, the tool call and its result are stored as NodeOutput events while the model is paused mid-answer, in order", async () => {
    const beforeTool = gate();
    const beforeAnswer = gate();
    const steps: StreamStep[] = [
      { pieces: ["I will ", "check ", "the owner.", beforeTool.wait, { tool: "lookup", input: { file: "src/a.ts" } }] },
      { pieces: [beforeAnswer.wait, '{"approved": true, ', '"notes": "owner ada"}'] },
    ];
    const { model } = streamingModel(steps);
    const { dbPath, wf } = oneTask(new ToolLoopAgent({ model, tools: { lookup } }));
    const live = follow();
    const finished = runWorkflow(wf, { runId: "live", onEvent: live.onEvent });

    // Paused before the tool call: the text so far is stored and heard, the attempt still runs.
    await live.until((e) => e.type === "NodeOutput" && e.text.endsWith("the owner."));
    expect(storedOutputs(dbPath)).toEqual([["text", "I will check the owner."]]);
    expect(attemptState(dbPath)).toEqual(["running"]);
    beforeTool.open();

    // Paused before the answer: the call and the tool's result are there too.
    await live.until((e) => e.type === "NodeOutput" && e.text.startsWith("lookup →"));
    expect(storedOutputs(dbPath)).toEqual([
      ["text", "I will check the owner."],
      ["tool", 'lookup {"file":"src/a.ts"}'],
      ["tool", 'lookup → {"owner":"ada"}'],
    ]);
    expect(live.events.some((e) => e.type === "NodeFinished")).toBe(false);
    expect(attemptState(dbPath)).toEqual(["running"]);
    beforeAnswer.open();

    expect((await finished).status).toBe("finished");
    expect(sql(dbPath, "SELECT approved, notes FROM review")).toEqual([{ approved: 1, notes: "owner ada" }]);
    expect(sql(dbPath, "SELECT count(*) AS n FROM _smithers_events WHERE type = 'NodeOutput'")).toEqual([{ n: live.outputs().length }]);
    expect(storedOutputs(dbPath).at(-1)).toEqual(["text", '{"approved": true, "notes": "owner ada"}']);
    const types = sql<{ type: string }>(dbPath, "SELECT type FROM _smithers_events ORDER BY seq").map((r) => r.type);
    expect(types.lastIndexOf("NodeOutput")).toBeLessThan(types.indexOf("NodeFinished"));
  });

  test("`smithers events --follow` prints the agent's text and tool lines while the model is paused, and ends with the run", async () => {
    const answer = gate();
    const { model } = streamingModel([
      { pieces: ["Reading the diff.", { tool: "lookup", input: { file: "src/a.ts" } }] },
      { pieces: [answer.wait, '{"approved": true, "notes": "owner ada"}'] },
    ]);
    const { dbPath, wf } = oneTask(new ToolLoopAgent({ model, tools: { lookup } }));
    const live = follow();
    const finished = runWorkflow(wf, { runId: "follow", onEvent: live.onEvent });
    await live.until((e) => e.type === "NodeOutput");

    const lines: string[] = [];
    const result = Promise.withResolvers<void>();
    const io = {
      out: (line: string) => {
        lines.push(line.replace(/^ *\d+ \S+ /, "")); // without its seq and time
        if (line.includes("lookup →")) result.resolve();
      },
      err: () => undefined,
    };
    const followed = eventsCommand(["follow", "--follow", "--type", "NodeOutput", "--db", dbPath], io);
    await result.promise;
    expect(lines).toEqual(["agent   review: Reading the diff.", 'tool    review: lookup {"file":"src/a.ts"}', 'tool    review: lookup → {"owner":"ada"}']);
    expect(attemptState(dbPath)).toEqual(["running"]);

    answer.open();
    expect(await followed).toBe(0);
    expect((await finished).status).toBe("finished");
    expect(lines.at(-1)).toBe('agent   review: {"approved": true, "notes": "owner ada"}');
  });

  test("a tool that fails shows as `name failed: message` and the model still answers", async () => {
    const broken = defineTool({
      name: "lookup",
      description: "Look up a file's owner",
      schema: z.object({ file: z.string() }),
      execute: async () => {
        throw new Error("owners file missing");
      },
    });
    const { model } = streamingModel([{ pieces: [{ tool: "lookup", input: { file: "src/a.ts" } }] }, { pieces: ['{"approved": false, "notes": "no owner"}'] }]);
    const { dbPath, wf } = oneTask(new ToolLoopAgent({ model, tools: { lookup: broken } }));
    expect((await runWorkflow(wf, { runId: "tool-error" })).status).toBe("finished");
    expect(storedOutputs(dbPath).slice(0, 2)).toEqual([
      ["tool", 'lookup {"file":"src/a.ts"}'],
      ["tool", expect.stringMatching(/^lookup failed: .*owners file missing/)],
    ]);
  });
});

describe("a streamed AI SDK agent's reply", () => {
  test("structured output is validated as with generate: a wrong one gets a streamed correction call; both calls' usage counts", async () => {
    const { model, calls } = streamingModel(
      [{ pieces: ['{"approved": ', '"yes"}'] }, { pieces: ['{"approved": false, ', '"notes": "needs tests"}'], usage: { input: 150, output: 30 } }],
      { servedModelId: "served-model-2" },
    );
    const agent = new ToolLoopAgent({ model, output: Output.object({ schema: z.looseObject({}) }) });
    const { dbPath, wf } = oneTask(agent);
    const pricing = { "served-model-2": { inputPerMTok: 1_000, outputPerMTok: 10_000 } };
    const result = await runWorkflow(wf, { runId: "structured", pricing });
    expect(result.status).toBe("finished");
    expect(calls()).toBe(2);
    expect(sql(dbPath, "SELECT approved, notes FROM review")).toEqual([{ approved: 0, notes: "needs tests" }]);
    // The model the provider says answered is recorded and priced: (250 * 1000 + 50 * 10000) / 1e6.
    expect(sql(dbPath, "SELECT input_tokens, output_tokens, agent_model, cost_usd FROM _smithers_attempts")).toEqual([
      { input_tokens: 250, output_tokens: 50, agent_model: "served-model-2", cost_usd: 0.75 },
    ]);
  });

  test("a provider error fails the attempt exactly as the same error from generate does, and is not printed", async () => {
    const denied = () =>
      new APICallError({ message: "invalid x-api-key", url: "http://127.0.0.1/v1/messages", requestBodyValues: {}, statusCode: 401, isRetryable: false });
    consoleError = spyOn(console, "error");
    const streamed = oneTask(new ToolLoopAgent({ model: new MockLanguageModelV4({ doStream: async () => Promise.reject(denied()) }) }), { retries: 0 });
    const generated = oneTask(new ToolLoopAgent({ model: new MockLanguageModelV4({ doGenerate: async () => Promise.reject(denied()) }) }), { retries: 0 });
    const a = await runWorkflow(streamed.wf, { runId: "e" });
    const b = await runWorkflow(generated.wf, { runId: "e" });
    expect(a.status).toBe("failed");
    expect(a.error?.code).toBe("AGENT_AUTH_FAILED"); // a 401 APICallError, classified like the CLI agents' refusals
    expect([a.error?.code, a.error?.message]).toEqual([b.error?.code, b.error?.message]);
    // (all but the stack, which names the mock's doStream or doGenerate)
    const errorOf = (dbPath: string) =>
      sql<{ error_json: string }>(dbPath, "SELECT error_json FROM _smithers_attempts").map(
        (r) => JSON.parse(r.error_json, (key, value: unknown) => (key === "stack" ? undefined : value)) as unknown,
      );
    expect(errorOf(streamed.dbPath)).toEqual(errorOf(generated.dbPath));
    expect(JSON.stringify(errorOf(streamed.dbPath))).toContain("invalid x-api-key");
    expect(consoleError).not.toHaveBeenCalled();
  });

  test("an error chunk mid-stream fails the call with that error; the text before it was already shown", async () => {
    // (the AI SDK itself prints an error chunk from the model, unless the agent has an onError)
    consoleError = spyOn(console, "error").mockImplementation(() => undefined);
    const { model, stopped } = streamingModel([{ pieces: ["Thinking about it", { error: new Error("overloaded") }, "never sent"] }]);
    const { dbPath, wf } = oneTask(new ToolLoopAgent({ model }), { retries: 0 });
    const result = await runWorkflow(wf, { runId: "mid" });
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("AGENT_FAILED");
    expect(result.error?.message).toContain("overloaded");
    expect(storedOutputs(dbPath)).toEqual([["text", "Thinking about it"]]);
    expect(stopped()).toBe(true);
  });

  test("the task's timeout aborts the stream: the model's call is stopped and the attempt fails TASK_TIMEOUT", async () => {
    const never = gate();
    const { model, stopped } = streamingModel([{ pieces: ["Working", never.wait, "late"] }]);
    const { dbPath, wf } = oneTask(new ToolLoopAgent({ model }), { timeoutMs: 300, retries: 0 });
    const result = await runWorkflow(wf, { runId: "slow" });
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("TASK_TIMEOUT");
    expect(stopped()).toBe(true);
    expect(storedOutputs(dbPath)).toEqual([["text", "Working"]]);
  });
});

describe("an AI SDK agent whose model cannot stream", () => {
  test("is called with generate after one refused stream, and with generate only from then on; its step text is still shown", async () => {
    let generated = 0;
    const model = new MockLanguageModelV4({
      doGenerate: async () => ({
        content: [{ type: "text" as const, text: `{"approved": true, "notes": "call ${++generated}"}` }],
        finishReason: { unified: "stop" as const, raw: "stop" },
        usage: { inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 5, text: 5, reasoning: 0 } },
        warnings: [],
      }),
    });
    const agent = new ToolLoopAgent({ model });
    consoleError = spyOn(console, "error");
    const first = oneTask(agent);
    const heard = follow();
    expect((await runWorkflow(first.wf, { runId: "a", onEvent: heard.onEvent })).status).toBe("finished");
    const second = oneTask(agent);
    expect((await runWorkflow(second.wf, { runId: "b" })).status).toBe("finished");
    expect([model.doStreamCalls.length, model.doGenerateCalls.length]).toEqual([1, 2]);
    expect(sql(second.dbPath, "SELECT notes FROM review")).toEqual([{ notes: "call 2" }]);
    expect(heard.outputs()).toEqual([["text", '{"approved": true, "notes": "call 1"}']]);
    expect(consoleError).not.toHaveBeenCalled();
  });
  test("a model refusing to stream with the SDK's UnsupportedFunctionalityError is called with generate; any other stream failure is not retried that way", async () => {
    const answer = {
      content: [{ type: "text" as const, text: '{"approved": true, "notes": "generated"}' }],
      finishReason: { unified: "stop" as const, raw: "stop" },
      usage: { inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 5, text: 5, reasoning: 0 } },
      warnings: [],
    };
    const refusing = new MockLanguageModelV4({
      doStream: async () => Promise.reject(new UnsupportedFunctionalityError({ functionality: "streaming" })),
      doGenerate: async () => answer,
    });
    const first = oneTask(new ToolLoopAgent({ model: refusing }));
    expect((await runWorkflow(first.wf, { runId: "refused" })).status).toBe("finished");
    expect(sql(first.dbPath, "SELECT notes FROM review")).toEqual([{ notes: "generated" }]);

    const failing = new MockLanguageModelV4({ doStream: async () => Promise.reject(new Error("connection reset")), doGenerate: async () => answer });
    const second = oneTask(new ToolLoopAgent({ model: failing }), { retries: 0 });
    const result = await runWorkflow(second.wf, { runId: "reset" });
    expect(result.error?.message).toContain("connection reset");
    expect([failing.doStreamCalls.length, failing.doGenerateCalls.length]).toEqual([1, 0]);
  });
});
