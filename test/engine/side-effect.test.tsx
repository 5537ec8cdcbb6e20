/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers, runWorkflow } from "../../src/index.ts";
import { openSmithersDb, toolCalls } from "../../src/db/index.ts";
import { query, tempDbPath } from "../helpers.ts";

const fast = { initialDelayMs: 1, maxDelayMs: 5 };
const out = { charge: z.object({ receipt: z.string() }) };

describe("ctx.sideEffect", () => {
  test("records the intent and the result in _smithers_tool_calls under runId:nodeId:iteration:name", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers(out, { dbPath });
    const wf = smithers(() => (
      <Workflow name="pay">
        <Task id="charge" output={outputs.charge}>
          {async (ctx) => ({
            receipt: await ctx.sideEffect(
              "stripe",
              (call) => {
                calls.push(call);
                return `r-${call.key}`;
              },
              { input: { amount: 5 } },
            ),
          })}
        </Task>
      </Workflow>
    ));
    const calls: { key: string; uncertain: boolean }[] = [];
    const result = await runWorkflow(wf, { runId: "r1" });
    expect(result.output).toEqual({ receipt: "r-r1:charge:0:stripe" });
    expect(calls).toEqual([{ key: "r1:charge:0:stripe", uncertain: false }]);
    expect(
      await query(dbPath, "SELECT node_id, attempt, seq, tool_name, status, side_effect, idempotency_key, input_json, output_json FROM _smithers_tool_calls"),
    ).toEqual([
      {
        node_id: "charge",
        attempt: 1,
        seq: 0,
        tool_name: "stripe",
        status: "succeeded",
        side_effect: 1,
        idempotency_key: "r1:charge:0:stripe",
        input_json: '{"amount":5}',
        output_json: '"r-r1:charge:0:stripe"',
      },
    ]);
    expect(await query(dbPath, "SELECT type FROM _smithers_events WHERE type LIKE 'ToolCall%' ORDER BY seq")).toEqual([
      { type: "ToolCallStarted" },
      { type: "ToolCallFinished" },
    ]);
  });

  test("a retried attempt gets the recorded result back without calling again", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers(out, { dbPath });
    let calls = 0;
    const wf = smithers(() => (
      <Workflow name="pay">
        <Task id="charge" output={outputs.charge} retries={2} retryPolicy={fast}>
          {async (ctx) => {
            const receipt = await ctx.sideEffect("stripe", () => `receipt-${++calls}`);
            if (ctx.attempt === 1) throw new Error("network blip after the charge");
            return { receipt };
          }}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { runId: "r1" });
    expect(result.status).toBe("finished");
    expect(calls).toBe(1);
    expect(result.output).toEqual({ receipt: "receipt-1" });
    expect(await query(dbPath, "SELECT attempt, status FROM _smithers_tool_calls")).toEqual([{ attempt: 1, status: "succeeded" }]);
  });

  test("an intent without a result (the process died mid-call) is retried with uncertain set and the same key", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers(out, { dbPath });
    const db = openSmithersDb(dbPath);
    await toolCalls.startToolCall(db, {
      runId: "r1",
      nodeId: "charge",
      iteration: 0,
      attempt: 1,
      toolName: "stripe",
      startedAtMs: 1,
      sideEffect: true,
      idempotencyKey: "r1:charge:0:stripe",
    });
    await db.close();
    const seen: { key: string; uncertain: boolean }[] = [];
    const wf = smithers(() => (
      <Workflow name="pay">
        <Task id="charge" output={outputs.charge}>
          {async (ctx) => ({
            receipt: await ctx.sideEffect("stripe", (call) => {
              seen.push(call);
              return "ok";
            }),
          })}
        </Task>
      </Workflow>
    ));
    await runWorkflow(wf, { runId: "r1" });
    expect(seen).toEqual([{ key: "r1:charge:0:stripe", uncertain: true }]);
    expect(await query(dbPath, "SELECT attempt, status FROM _smithers_tool_calls ORDER BY attempt")).toEqual([
      { attempt: 1, status: "started" },
      { attempt: 1, status: "succeeded" },
    ]);
  });

  test("a call that throws is recorded as failed and runs again on the next attempt", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers(out, { dbPath });
    let calls = 0;
    const wf = smithers(() => (
      <Workflow name="pay">
        <Task id="charge" output={outputs.charge} retries={1} retryPolicy={fast}>
          {async (ctx) => ({
            receipt: await ctx.sideEffect("stripe", () => {
              if (++calls === 1) throw new Error("card declined");
              return "paid";
            }),
          })}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { runId: "r1" });
    expect(result.output).toEqual({ receipt: "paid" });
    expect(calls).toBe(2);
    const rows = await query<{ attempt: number; status: string; error_json: string | null }>(
      dbPath,
      "SELECT attempt, status, error_json FROM _smithers_tool_calls ORDER BY attempt",
    );
    expect(rows.map((r) => [r.attempt, r.status])).toEqual([
      [1, "failed"],
      [2, "succeeded"],
    ]);
    expect(JSON.parse(rows[0]!.error_json!).message).toBe("card declined");
  });
});
