import { afterEach, describe, expect, test } from "bun:test";
import { tool } from "ai";
import { z } from "zod";
import { toolCalls } from "../../src/db/index.ts";
import { SmithersError } from "../../src/errors/index.ts";
import {
  bash,
  defineTool,
  edit,
  getDefinedToolMetadata,
  getToolContext,
  grep,
  inputDigest,
  read,
  runWithToolContext,
  type ToolCallContext,
  type ToolContext,
  write,
} from "../../src/tools/index.ts";
import { rejection, sql } from "../helpers.ts";
import { agentCalling, call, closeScopes, toolScope } from "./helpers.ts";

afterEach(closeScopes);

const columns = "attempt, seq, tool_name, status, side_effect, idempotency_key, input_json, output_json, error_json, started_at_ms, finished_at_ms";

/** A side-effect tool that counts its runs and remembers the context of each. */
function counter() {
  const seen: ToolCallContext[] = [];
  const send = defineTool({
    name: "send",
    description: "Send a message",
    schema: z.object({ to: z.string() }),
    sideEffect: true,
    idempotent: false,
    execute: (args, ctx) => {
      seen.push(ctx);
      return `sent-${seen.length}-to-${args.to}`;
    },
  });
  return { send, seen };
}

describe("defineTool", () => {
  test("a call an agent makes inside runWithToolContext is a succeeded row with its input, output and start and finish times", async () => {
    let clock = 1_000;
    const reports: unknown[] = [];
    const { dbPath, ctx } = toolScope({ now: () => (clock += 10), onRecorded: (r) => reports.push(r) });
    const lookup = defineTool({ name: "lookup", schema: z.object({ id: z.number() }), execute: (args) => ({ name: `user-${args.id}` }) });
    const result = await runWithToolContext(ctx, () => agentCalling({ lookup }, "lookup", { id: 7 }).generate({ prompt: "who is 7?" }));
    expect(result.text).toBe("done");
    expect(result.steps[0]?.toolResults.map((r) => r.output)).toEqual([{ name: "user-7" }]);
    expect(sql(dbPath, `SELECT ${columns} FROM _smithers_tool_calls`)).toEqual([
      {
        attempt: 1,
        seq: 0,
        tool_name: "lookup",
        status: "succeeded",
        side_effect: 0,
        idempotency_key: expect.stringMatching(/^r1:fix:0:lookup:[0-9a-f]{12}:0$/),
        input_json: '{"id":7}',
        output_json: '{"name":"user-7"}',
        error_json: null,
        started_at_ms: 1_010,
        finished_at_ms: 1_020,
      },
    ]);
    expect(reports).toEqual([
      { type: "ToolCallStarted", toolName: "lookup" },
      { type: "ToolCallFinished", toolName: "lookup", status: "succeeded" },
    ]);
  });

  test("a tool that throws is a failed row whose error JSON says TOOL_FAILED with the message, and the agent goes on", async () => {
    const { dbPath, ctx } = toolScope();
    const broken = defineTool({
      name: "broken",
      schema: z.object({}),
      execute: () => {
        throw new Error("disk on fire");
      },
    });
    const result = await runWithToolContext(ctx, () => agentCalling({ broken }, "broken", {}).generate({ prompt: "go" }));
    expect(result.text).toBe("done");
    const [row] = sql<{ status: string; output_json: string | null; error_json: string }>(
      dbPath,
      "SELECT status, output_json, error_json FROM _smithers_tool_calls",
    );
    expect([row?.status, row?.output_json]).toEqual(["failed", null]);
    expect(JSON.parse(row!.error_json)).toMatchObject({
      code: "TOOL_FAILED",
      message: 'Tool "broken" failed: disk on fire',
      toolName: "broken",
      nodeId: "fix",
    });
  });

  test("a key names the tool, a digest of its input and how many identical calls came before, in the order the agent made them", async () => {
    const { dbPath, ctx } = toolScope();
    const echo = defineTool({ name: "echo", schema: z.object({ say: z.string() }), execute: (args) => args.say });
    await runWithToolContext(ctx, () => agentCalling({ echo }, "echo", { say: "a" }, { say: "b" }, { say: "a" }).generate({ prompt: "go" }));
    const a = inputDigest({ say: "a" });
    const b = inputDigest({ say: "b" });
    expect(a).not.toBe(b);
    expect(sql(dbPath, "SELECT idempotency_key, input_json FROM _smithers_tool_calls ORDER BY seq")).toEqual([
      { idempotency_key: `r1:fix:0:echo:${a}:0`, input_json: '{"say":"a"}' },
      { idempotency_key: `r1:fix:0:echo:${b}:0`, input_json: '{"say":"b"}' },
      { idempotency_key: `r1:fix:0:echo:${a}:1`, input_json: '{"say":"a"}' },
    ]);
  });

  test("execute gets the idempotency key, the task's ids, the root directory and the attempt's signal", async () => {
    const signal = new AbortController().signal;
    const { ctx } = toolScope({ iteration: 2, attempt: 3, signal, maxOutputBytes: 10, toolTimeoutMs: 20 });
    const { send, seen } = counter();
    await runWithToolContext(ctx, () => call(send, { to: "ann" }));
    expect(seen).toEqual([
      {
        idempotencyKey: expect.stringMatching(/^r1:fix:2:send:[0-9a-f]{12}:0$/),
        runId: "r1",
        nodeId: "fix",
        iteration: 2,
        attempt: 3,
        rootDir: ctx.rootDir,
        signal,
        uncertain: false,
        maxOutputBytes: 10,
        timeoutMs: 20,
      },
    ]);
  });

  test("the tool context reaches the tool through the agent loop, and is gone outside runWithToolContext", async () => {
    const { ctx } = toolScope();
    let inside: ToolContext | undefined;
    const peek = defineTool({
      name: "peek",
      schema: z.object({}),
      execute: () => {
        inside = getToolContext();
        return "ok";
      },
    });
    await runWithToolContext(ctx, () => agentCalling({ peek }, "peek", {}).generate({ prompt: "go" }));
    expect(inside).toBe(ctx);
    expect(getToolContext()).toBeUndefined();
  });

  test("getDefinedToolMetadata reads name, sideEffect and idempotent, with defaults, and is undefined for other tools", () => {
    const pure = defineTool({ name: "pure", schema: z.object({}), execute: () => 1 });
    const plain = tool({ inputSchema: z.object({}), execute: () => 1 });
    expect(getDefinedToolMetadata(counter().send)).toEqual({ name: "send", sideEffect: true, idempotent: false });
    expect(getDefinedToolMetadata(pure)).toEqual({ name: "pure", sideEffect: false, idempotent: true });
    expect(getDefinedToolMetadata(plain)).toBeUndefined();
  });

  test("a built-in tool's input schema, built on first use, is one schema every time it is read, and refuses bad input", () => {
    for (const builtIn of [read, write, edit, grep, bash]) {
      const schema = builtIn.inputSchema;
      expect(builtIn.inputSchema).toBe(schema);
      expect(schema.safeParse({}).success).toBe(false);
    }
    expect(read.inputSchema.safeParse({ path: "a.txt" }).success).toBe(true);
    expect(bash.inputSchema.safeParse({ cmd: "ls", args: ["-l"] }).success).toBe(true);
  });
});

describe("defineTool replay protection", () => {
  test("a retried attempt making the same side-effect call gets the recorded output back without running it, recorded as replayed", async () => {
    const reports: unknown[] = [];
    const { dbPath, ctx } = toolScope();
    const { send, seen } = counter();
    await runWithToolContext(ctx, () => agentCalling({ send }, "send", { to: "ann" }).generate({ prompt: "go" }));
    const retry = await runWithToolContext({ ...ctx, attempt: 2, onRecorded: (r) => reports.push(r) }, () =>
      agentCalling({ send }, "send", { to: "ann" }).generate({ prompt: "go" }),
    );
    expect(seen.length).toBe(1);
    expect(retry.steps[0]?.toolResults.map((r) => r.output)).toEqual(["sent-1-to-ann"]);
    expect(sql(dbPath, "SELECT attempt, status, side_effect, idempotency_key, input_json, output_json FROM _smithers_tool_calls ORDER BY attempt")).toEqual([
      {
        attempt: 1,
        status: "succeeded",
        side_effect: 1,
        idempotency_key: expect.stringMatching(/^r1:fix:0:send:[0-9a-f]{12}:0$/),
        input_json: '{"to":"ann"}',
        output_json: '"sent-1-to-ann"',
      },
      {
        attempt: 2,
        status: "replayed",
        side_effect: 1,
        idempotency_key: expect.stringMatching(/^r1:fix:0:send:[0-9a-f]{12}:0$/),
        input_json: '{"to":"ann"}',
        output_json: '"sent-1-to-ann"',
      },
    ]);
    expect(reports).toEqual([
      { type: "ToolCallStarted", toolName: "send" },
      { type: "ToolCallFinished", toolName: "send", status: "replayed" },
    ]);
  });

  test("a replayed call is replayed again on a third attempt", async () => {
    const { ctx } = toolScope();
    const { send, seen } = counter();
    for (const attempt of [1, 2, 3]) await runWithToolContext({ ...ctx, attempt }, () => call(send, { to: "ann" }));
    expect(seen.length).toBe(1);
  });

  test("an earlier call that only started (its process died) runs again with uncertain set and the same key", async () => {
    const { db, dbPath, ctx } = toolScope();
    await toolCalls.startToolCall(db, {
      runId: "r1",
      nodeId: "fix",
      attempt: 1,
      toolName: "send",
      input: { to: "ann" },
      startedAtMs: 1,
      sideEffect: true,
      idempotencyKey: `r1:fix:0:send:${inputDigest({ to: "ann" })}:0`,
    });
    const { send, seen } = counter();
    expect(await runWithToolContext({ ...ctx, attempt: 2 }, () => call(send, { to: "ann" }))).toBe("sent-1-to-ann");
    expect(seen.map((c) => [c.idempotencyKey, c.uncertain])).toEqual([[expect.stringMatching(/^r1:fix:0:send:[0-9a-f]{12}:0$/), true]]);
    expect(sql(dbPath, "SELECT attempt, status FROM _smithers_tool_calls ORDER BY attempt")).toEqual([
      { attempt: 1, status: "started" },
      { attempt: 2, status: "succeeded" },
    ]);
  });

  test("another input is another operation with another key: it runs", async () => {
    const { dbPath, ctx } = toolScope();
    const { send, seen } = counter();
    await runWithToolContext(ctx, () => call(send, { to: "ann" }));
    expect(await runWithToolContext({ ...ctx, attempt: 2 }, () => call(send, { to: "bob" }))).toBe("sent-2-to-bob");
    expect(seen.map((c) => [c.idempotencyKey, c.uncertain])).toEqual([
      [`r1:fix:0:send:${inputDigest({ to: "ann" })}:0`, false],
      [`r1:fix:0:send:${inputDigest({ to: "bob" })}:0`, false],
    ]);
    expect(sql(dbPath, "SELECT attempt, status FROM _smithers_tool_calls ORDER BY attempt")).toEqual([
      { attempt: 1, status: "succeeded" },
      { attempt: 2, status: "succeeded" },
    ]);
  });

  test("a call that failed before runs again on the next attempt", async () => {
    const { ctx } = toolScope();
    let runs = 0;
    const flaky = defineTool({
      name: "flaky",
      schema: z.object({}),
      sideEffect: true,
      execute: () => {
        runs += 1;
        if (runs === 1) throw new Error("timeout talking to the API");
        return "ok";
      },
    });
    expect((await rejection(runWithToolContext(ctx, () => call(flaky, {})))).code).toBe("TOOL_FAILED");
    expect(await runWithToolContext({ ...ctx, attempt: 2 }, () => call(flaky, {}))).toBe("ok");
    expect(runs).toBe(2);
  });

  test("a tool without side effects runs on every attempt", async () => {
    const { ctx } = toolScope();
    let runs = 0;
    const look = defineTool({ name: "look", schema: z.object({}), execute: () => ++runs });
    await runWithToolContext(ctx, () => call(look, {}));
    expect(await runWithToolContext({ ...ctx, attempt: 2 }, () => call(look, {}))).toBe(2);
  });

  test("another iteration of the same node does not replay the previous iteration's call", async () => {
    const { ctx } = toolScope();
    const { send, seen } = counter();
    await runWithToolContext(ctx, () => call(send, { to: "ann" }));
    await runWithToolContext({ ...ctx, iteration: 1 }, () => call(send, { to: "ann" }));
    expect(seen.map((c) => c.idempotencyKey)).toEqual([
      expect.stringMatching(/^r1:fix:0:send:[0-9a-f]{12}:0$/),
      expect.stringMatching(/^r1:fix:1:send:[0-9a-f]{12}:0$/),
    ]);
  });
});

describe("defineTool input validation", () => {
  test("input that fails the schema is refused with TOOL_INVALID_INPUT and recorded as a failed row; the tool does not run", async () => {
    const { dbPath, ctx } = toolScope();
    const { send, seen } = counter();
    const error = await rejection(runWithToolContext(ctx, () => call(send, { to: 42 })));
    expect(error.code).toBe("TOOL_INVALID_INPUT");
    expect(error.message).toContain("to:");
    expect(seen).toEqual([]);
    const rows = sql<{ status: string; input_json: string; error_json: string }>(dbPath, "SELECT status, input_json, error_json FROM _smithers_tool_calls");
    expect(rows.map((r) => [r.status, r.input_json, JSON.parse(r.error_json).code])).toEqual([["failed", '{"to":42}', "TOOL_INVALID_INPUT"]]);
  });

  test("in the agent loop the AI SDK refuses bad input before execute: no row, and the model is told", async () => {
    const { dbPath, ctx } = toolScope();
    const { send, seen } = counter();
    const result = await runWithToolContext(ctx, () => agentCalling({ send }, "send", { to: 42 }).generate({ prompt: "go" }));
    expect(result.steps[0]?.content.some((part) => part.type === "tool-error")).toBe(true);
    expect(seen).toEqual([]);
    expect(sql(dbPath, "SELECT * FROM _smithers_tool_calls")).toEqual([]);
  });
});

describe("defineTool outside a task", () => {
  test("a tool without side effects runs unrecorded, rooted at the process's cwd, with a one-off key", async () => {
    const seen: ToolCallContext[] = [];
    const look = defineTool({
      name: "look",
      schema: z.object({ q: z.string() }),
      execute: (args, ctx) => {
        seen.push(ctx);
        return args.q;
      },
    });
    expect(await call(look, { q: "x" })).toBe("x");
    await call(look, { q: "y" });
    expect(seen[0]).toMatchObject({ runId: "", nodeId: "", iteration: 0, attempt: 0, rootDir: process.cwd(), uncertain: false });
    expect(seen[0]?.idempotencyKey).toStartWith("unscoped:look:");
    expect(seen[0]?.idempotencyKey).not.toBe(seen[1]?.idempotencyKey);
  });

  test("a side-effect tool throws TOOL_CONTEXT_MISSING without running: nothing could record or protect it", async () => {
    const { send, seen } = counter();
    const error = await rejection(call(send, { to: "ann" }));
    expect(error.code).toBe("TOOL_CONTEXT_MISSING");
    expect(seen).toEqual([]);
  });

  test("bad input is still refused with TOOL_INVALID_INPUT", async () => {
    const look = defineTool({ name: "look", schema: z.object({ q: z.string() }), execute: (args) => args.q });
    expect((await rejection(call(look, {}))).code).toBe("TOOL_INVALID_INPUT");
  });
});

describe("defineTool in a stopped attempt", () => {
  test("starts no call: the stop reason is thrown, nothing runs, no row is written", async () => {
    const controller = new AbortController();
    controller.abort(new SmithersError("TASK_TIMEOUT", "too slow"));
    const { dbPath, ctx } = toolScope({ signal: controller.signal });
    const { send, seen } = counter();
    expect((await rejection(runWithToolContext(ctx, () => call(send, { to: "ann" })))).code).toBe("TASK_TIMEOUT");
    expect(seen).toEqual([]);
    expect(sql(dbPath, "SELECT * FROM _smithers_tool_calls")).toEqual([]);
  });

  test("a stop that is not a SmithersError is reported as TASK_CANCELLED", async () => {
    const controller = new AbortController();
    controller.abort();
    const { ctx } = toolScope({ signal: controller.signal });
    const look = defineTool({ name: "look", schema: z.object({}), execute: () => 1 });
    expect((await rejection(runWithToolContext(ctx, () => call(look, {})))).code).toBe("TASK_CANCELLED");
  });
});

test("A, then B failing, then A again on three attempts: A ran once, B's key never carried A's receipt", async () => {
  const { dbPath, ctx } = toolScope();
  let runs = 0;
  const pay = defineTool({
    name: "pay",
    schema: z.object({ to: z.string() }),
    sideEffect: true,
    idempotent: false,
    execute: ({ to }) => {
      runs++;
      if (to === "bob") throw new Error("card declined");
      return `paid-${to}-${runs}`;
    },
  });
  const invoke = (input: { to: string }) => call(pay, input);
  expect(await runWithToolContext({ ...ctx, attempt: 1 }, () => invoke({ to: "ann" }))).toBe("paid-ann-1");
  await runWithToolContext({ ...ctx, attempt: 2 }, () => invoke({ to: "bob" })).catch(() => undefined);
  expect(await runWithToolContext({ ...ctx, attempt: 3 }, () => invoke({ to: "ann" }))).toBe("paid-ann-1");
  expect(runs).toBe(2);
  expect(sql(dbPath, "SELECT attempt, status FROM _smithers_tool_calls ORDER BY attempt")).toEqual([
    { attempt: 1, status: "succeeded" },
    { attempt: 2, status: "failed" },
    { attempt: 3, status: "replayed" },
  ]);
});
