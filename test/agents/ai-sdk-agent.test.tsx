/**
 * An AI SDK agent (`ToolLoopAgent`) as a Task's agent, unchanged, on the `ai` package's mock
 * model: text and structured output, usage per attempt and per run, the abort signal, and the
 * spend brakes (maxCostUsd, maxTokens) with a resume after raising them.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Output, ToolLoopAgent } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { z } from "zod";
import { createSmithers, defineTool, runWorkflow, tools, type SmithersEvent } from "../../src/index.ts";
import { sql, tempDbPath } from "../helpers.ts";

type Usage = { input: number; cached?: number; output: number };

/** A generate result of the mock model: `text`, with the given token counts. */
function reply(text: string, usage: Usage = { input: 100, cached: 40, output: 20 }) {
  return {
    content: [{ type: "text" as const, text }],
    finishReason: { unified: "stop" as const, raw: "stop" },
    usage: {
      inputTokens: { total: usage.input, noCache: usage.input - (usage.cached ?? 0), cacheRead: usage.cached ?? 0, cacheWrite: 0 },
      outputTokens: { total: usage.output, text: usage.output, reasoning: 0 },
    },
    warnings: [],
  };
}

function agentReplying(texts: string[], modelId = "mock-model") {
  let call = 0;
  const model = new MockLanguageModelV4({
    modelId,
    doGenerate: async () => reply(texts[Math.min(call++, texts.length - 1)]!),
  });
  return { agent: new ToolLoopAgent({ model, instructions: "Review code." }), model, calls: () => call };
}

const review = z.object({ approved: z.boolean(), notes: z.string() });

describe("an AI SDK ToolLoopAgent as a Task's agent", () => {
  test("its text reply is parsed and validated; usage lands on the attempt, the run result and as NodeOutput", async () => {
    const dbPath = tempDbPath();
    const { smithers, Workflow, Task, outputs } = createSmithers({ review }, { dbPath });
    const { agent } = agentReplying(['Here it is:\n```json\n{"approved": true, "notes": "fine"}\n```']);
    const wf = smithers(() => (
      <Workflow name="review">
        <Task id="review" output={outputs.review} agent={agent}>
          Review the diff.
        </Task>
      </Workflow>
    ));
    const events: SmithersEvent[] = [];
    const result = await runWorkflow(wf, { runId: "r1", onEvent: (e) => events.push(e) });
    expect(result.status).toBe("finished");
    expect(sql(dbPath, "SELECT approved, notes FROM review")).toEqual([{ approved: 1, notes: "fine" }]);
    expect(sql(dbPath, "SELECT input_tokens, cached_input_tokens, output_tokens, cost_usd, agent_model FROM _smithers_attempts")).toEqual([
      { input_tokens: 100, cached_input_tokens: 40, output_tokens: 20, cost_usd: null, agent_model: "mock-model" },
    ]);
    expect(result.usage).toEqual({ inputTokens: 100, cachedInputTokens: 40, outputTokens: 20, costUsd: null });
    const output = events.find((e) => e.type === "NodeOutput");
    expect(output).toMatchObject({ nodeId: "review", attempt: 1, stream: "text" });
    expect((output as { text: string }).text).toContain('"approved": true');
  });

  test("a structured output (Output.object) is validated directly; a wrong one gets a correction call", async () => {
    const dbPath = tempDbPath();
    const { smithers, Workflow, Task, outputs } = createSmithers({ review }, { dbPath });
    let call = 0;
    const model = new MockLanguageModelV4({
      doGenerate: async () => reply(call++ === 0 ? '{"approved": "yes"}' : '{"approved": false, "notes": "needs tests"}'),
    });
    // The SDK accepts any object; the task's schema is what refuses the first one.
    const agent = new ToolLoopAgent({ model, output: Output.object({ schema: z.looseObject({}) }) });
    const wf = smithers(() => (
      <Workflow name="structured">
        <Task id="review" output={outputs.review} agent={agent}>
          Review.
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { runId: "s1" });
    expect(result.status).toBe("finished");
    expect(call).toBe(2);
    expect(sql(dbPath, "SELECT approved, notes FROM review")).toEqual([{ approved: 0, notes: "needs tests" }]);
    // Both calls' tokens count: the correction call was paid for too.
    expect(result.usage?.inputTokens).toBe(200);
  });

  test("a task's timeout reaches the model through the abort signal", async () => {
    const dbPath = tempDbPath();
    const { smithers, Workflow, Task, outputs } = createSmithers({ review }, { dbPath });
    let aborted = false;
    const model = new MockLanguageModelV4({
      doGenerate: ({ abortSignal }) =>
        new Promise((_, reject) => {
          abortSignal?.addEventListener("abort", () => {
            aborted = true;
            reject(abortSignal.reason);
          });
        }),
    });
    const wf = smithers(() => (
      <Workflow name="slow">
        <Task id="review" output={outputs.review} agent={new ToolLoopAgent({ model })} timeoutMs={50} retries={0}>
          Review.
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { runId: "t1" });
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("TASK_TIMEOUT");
    expect(aborted).toBe(true);
  });

  test("agent={[primary, fallback]}: a failing AI SDK agent falls through to the next", async () => {
    const dbPath = tempDbPath();
    const { smithers, Workflow, Task, outputs } = createSmithers({ review }, { dbPath });
    const broken = new ToolLoopAgent({
      model: new MockLanguageModelV4({
        doGenerate: async () => {
          throw new Error("provider down");
        },
      }),
    });
    const { agent: fallback } = agentReplying(['{"approved": true, "notes": "from the fallback"}']);
    const wf = smithers(() => (
      <Workflow name="fallback">
        <Task id="review" output={outputs.review} agent={[broken, fallback]}>
          Review.
        </Task>
      </Workflow>
    ));
    expect((await runWorkflow(wf, { runId: "f1" })).status).toBe("finished");
    expect(sql(dbPath, "SELECT notes FROM review")).toEqual([{ notes: "from the fallback" }]);
  });
});

describe("tools of an AI SDK agent inside a Task", () => {
  /** First step: call `toolName` with `input`; second: reply `answer`. */
  function callingThenAnswering(toolName: string, input: unknown, answer: string) {
    let step = 0;
    return new MockLanguageModelV4({
      doGenerate: async () => {
        if (step++ === 0) {
          return {
            content: [{ type: "tool-call" as const, toolCallId: "c1", toolName, input: JSON.stringify(input) }],
            finishReason: { unified: "tool-calls" as const, raw: "tool_use" },
            usage: reply("").usage,
            warnings: [],
          };
        }
        return reply(answer);
      },
    });
  }

  test("a defineTool tool the agent calls runs once, is journaled in _smithers_tool_calls and reported as events", async () => {
    const dbPath = tempDbPath();
    const { smithers, Workflow, Task, outputs } = createSmithers({ review }, { dbPath });
    const looked: string[] = [];
    const lookup = defineTool({
      name: "lookup",
      description: "Look up a file's owner",
      schema: z.object({ file: z.string() }),
      execute: async ({ file }, ctx) => {
        looked.push(`${file}@${ctx.nodeId}#${ctx.attempt}`);
        return { owner: "ada" };
      },
    });
    const agent = new ToolLoopAgent({
      model: callingThenAnswering("lookup", { file: "src/a.ts" }, '{"approved": true, "notes": "owner ada"}'),
      tools: { lookup },
    });
    const wf = smithers(() => (
      <Workflow name="tools">
        <Task id="review" output={outputs.review} agent={agent}>
          Review.
        </Task>
      </Workflow>
    ));
    const events: SmithersEvent[] = [];
    expect((await runWorkflow(wf, { runId: "tc", onEvent: (e) => events.push(e) })).status).toBe("finished");
    expect(looked).toEqual(["src/a.ts@review#1"]);
    const rows = sql<Record<string, unknown>>(
      dbPath,
      "SELECT node_id, attempt, seq, tool_name, input_json, output_json, status, side_effect, idempotency_key, finished_at_ms >= started_at_ms AS timed FROM _smithers_tool_calls",
    );
    expect(rows).toEqual([
      {
        node_id: "review",
        attempt: 1,
        seq: 0,
        tool_name: "lookup",
        input_json: '{"file":"src/a.ts"}',
        output_json: '{"owner":"ada"}',
        status: "succeeded",
        side_effect: 0,
        idempotency_key: expect.stringMatching(/^tc:review:0:lookup:[0-9a-f]{12}:0$/),
        timed: 1,
      },
    ]);
    expect(events.filter((e) => e.type.startsWith("ToolCall")).map((e) => e.type)).toEqual(["ToolCallStarted", "ToolCallFinished"]);
    // An operator following the task sees the call, its result and the final text.
    expect(events.flatMap((e) => (e.type === "NodeOutput" ? [[e.stream, e.text]] : []))).toEqual([
      ["tool", 'lookup {"file":"src/a.ts"}'],
      ["tool", 'lookup → {"owner":"ada"}'],
      ["text", '{"approved": true, "notes": "owner ada"}'],
    ]);
  });

  test("the built-in write tool is confined to the run's root directory", async () => {
    const dbPath = tempDbPath();
    const root = realpathSync(mkdtempSync(join(tmpdir(), "smithers-root-")));
    const { smithers, Workflow, Task, outputs } = createSmithers({ review }, { dbPath });
    const wf = (path: string) =>
      smithers(() => (
        <Workflow name="writer">
          <Task
            id="write"
            output={outputs.review}
            agent={new ToolLoopAgent({ model: callingThenAnswering("write", { path, content: "hello\n" }, '{"approved": true, "notes": "written"}'), tools })}
          >
            Write.
          </Task>
        </Workflow>
      ));
    expect((await runWorkflow(wf("notes/out.txt"), { runId: "w1", rootDir: root })).status).toBe("finished");
    expect(readFileSync(join(root, "notes/out.txt"), "utf8")).toBe("hello\n");
    // Outside the root: the tool refuses; the model sees the error and still answers.
    expect((await runWorkflow(wf("../escape.txt"), { runId: "w2", rootDir: root })).status).toBe("finished");
    expect(existsSync(join(root, "../escape.txt"))).toBe(false);
    expect(sql(dbPath, "SELECT run_id, status, json_extract(error_json, '$.code') AS code FROM _smithers_tool_calls ORDER BY run_id")).toEqual([
      { run_id: "w1", status: "succeeded", code: null },
      { run_id: "w2", status: "failed", code: "TOOL_PATH_OUTSIDE_ROOT" },
    ]);
  });
});

describe("spend brakes", () => {
  const counter = z.object({ n: z.number() });

  /** Three agent tasks in sequence; each call costs 100 input + 20 output tokens. */
  function threeSteps(dbPath: string, options: Parameters<typeof createSmithers>[1] = {}) {
    const kit = createSmithers({ counter }, { dbPath, ...options });
    const { agent, calls } = agentReplying(['{"n": 1}'], "priced-model");
    const wf = kit.smithers(() => (
      <kit.Workflow name="steps">
        <kit.Sequence>
          <kit.Task id="one" output={kit.outputs.counter} agent={agent}>
            One.
          </kit.Task>
          <kit.Task id="two" output={kit.outputs.counter} agent={agent}>
            Two.
          </kit.Task>
          <kit.Task id="three" output={kit.outputs.counter} agent={agent}>
            Three.
          </kit.Task>
        </kit.Sequence>
      </kit.Workflow>
    ));
    return { wf, calls };
  }

  // $1 per million input tokens (cached ones half), $10 per million output: one call costs
  // 60 * 1e-6 + 40 * 0.5e-6 + 20 * 10e-6 = $0.00028.
  const pricing = { "priced-model": { inputPerMTok: 1, cachedInputPerMTok: 0.5, outputPerMTok: 10 } };

  test("maxCostUsd: no new agent attempt once the spend reaches the limit; the run fails BUDGET_EXCEEDED and resumes after raising it", async () => {
    const dbPath = tempDbPath();
    const { wf, calls } = threeSteps(dbPath, { pricing });
    const first = await runWorkflow(wf, { runId: "b1", maxCostUsd: 0.0005 });
    expect(first.status).toBe("failed");
    expect(first.error?.code).toBe("BUDGET_EXCEEDED");
    expect(calls()).toBe(2); // 0.00028 < 0.0005 lets the second start; 0.00056 stops the third
    expect(first.usage?.costUsd).toBeCloseTo(0.00056, 10);
    expect(sql(dbPath, "SELECT node_id, state FROM _smithers_nodes ORDER BY node_id")).toEqual([
      { node_id: "one", state: "finished" },
      { node_id: "two", state: "finished" },
    ]);
    expect(sql<{ config_json: string }>(dbPath, "SELECT config_json FROM _smithers_runs")[0]?.config_json).toBe('{"budget":{"maxCostUsd":0.0005}}');

    // Resuming without a new limit keeps the stored one: still refused, nothing runs.
    const again = await runWorkflow(wf, { runId: "b1", resume: true });
    expect(again.error?.code).toBe("BUDGET_EXCEEDED");
    expect(calls()).toBe(2);

    const raised = await runWorkflow(wf, { runId: "b1", resume: true, maxCostUsd: 0.01 });
    expect(raised.status).toBe("finished");
    expect(calls()).toBe(3);
    expect(raised.usage?.costUsd).toBeCloseTo(0.00084, 10);
    expect(sql(dbPath, "SELECT round(sum(cost_usd), 8) AS spent FROM _smithers_attempts WHERE run_id = 'b1'")).toEqual([{ spent: 0.00084 }]);
  });

  test("maxTokens counts input and output tokens; createSmithers' limit is the default", async () => {
    const dbPath = tempDbPath();
    const { wf, calls } = threeSteps(dbPath, { maxTokens: 120 });
    const result = await runWorkflow(wf, { runId: "t1" });
    expect(result.error?.code).toBe("BUDGET_EXCEEDED");
    expect(calls()).toBe(1);
    expect(result.error?.details).toMatchObject({ maxTokens: 120, spentTokens: 120 });
  });

  test("a cost limit with an agent that reports tokens for a model without a price fails BUDGET_UNPRICED instead of ignoring the limit", async () => {
    const dbPath = tempDbPath();
    const { wf, calls } = threeSteps(dbPath);
    const result = await runWorkflow(wf, { runId: "u1", maxCostUsd: 1 });
    expect(result.error?.code).toBe("BUDGET_UNPRICED");
    expect(result.error?.details).toMatchObject({ model: "priced-model" });
    expect(calls()).toBe(1);
    // Given the price on resume, the stored attempt is priced and the run goes on.
    const priced = await runWorkflow(wf, { runId: "u1", resume: true, pricing });
    expect(priced.status).toBe("finished");
    expect(calls()).toBe(3);
  });

  test("bad limits and prices are INVALID_OPTION before anything runs", async () => {
    const dbPath = tempDbPath();
    const { wf } = threeSteps(dbPath);
    for (const options of [{ maxCostUsd: -1 }, { maxTokens: 1.5 }, { maxCostUsd: Number.NaN }, { pricing: { m: { inputPerMTok: "1", outputPerMTok: 1 } } }]) {
      const error = await runWorkflow(wf, { runId: "bad", ...(options as object) }).catch((e: unknown) => e);
      expect((error as { code?: string }).code).toBe("INVALID_OPTION");
    }
    expect(existsSync(dbPath) ? sql(dbPath, "SELECT count(*) AS n FROM _smithers_runs") : [{ n: 0 }]).toEqual([{ n: 0 }]);
    expect(() => createSmithers({ counter }, { maxTokens: -5 })).toThrow(/maxTokens/);
  });
});
