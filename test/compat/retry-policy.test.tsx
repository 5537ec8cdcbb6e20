/** @jsxImportSource smithers-workflows */
/**
 * What smithers-orchestrator's documentation says about a Task's retries, retry policy, timeouts
 * and schema corrections, checked against this engine with workflows of the kind it shows
 * (delays scaled down from seconds to tens of ms). Where this engine differs on purpose (the
 * default of `retries`), see docs/guides/failures-and-retries.md.
 */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers, runWorkflow, scriptedAgent, type SmithersEvent } from "../../src/index.ts";
import { sql, sleepUnlessAborted, tempDbPath } from "../helpers.ts";

type AttemptRow = { node_id: string; attempt: number; state: string; started_at_ms: number; finished_at_ms: number; code: string | null };

const attempts = (dbPath: string, nodeId: string) =>
  sql<AttemptRow>(
    dbPath,
    "SELECT node_id, attempt, state, started_at_ms, finished_at_ms, json_extract(error_json, '$.code') AS code FROM _smithers_attempts WHERE node_id = ? ORDER BY attempt",
    nodeId,
  );

/** The wait before each retry of `nodeId`, as the engine announced it. */
const waits = (events: SmithersEvent[], nodeId: string) => events.flatMap((e) => (e.type === "NodeRetrying" && e.nodeId === nodeId ? [e.delayMs] : []));

/** Time from the end of each failed attempt to the start of the next. */
const gaps = (rows: AttemptRow[]) => rows.slice(1).map((row, i) => row.started_at_ms - rows[i]!.finished_at_ms);

const schemas = {
  quote: z.object({ price: z.number() }),
  report: z.object({ ok: z.boolean() }),
};

describe("smithers-orchestrator: retry policy & timeouts", () => {
  test("an API call with retries={3} and exponential backoff gets through two rate-limited attempts, waiting d then 2d", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers(schemas, { dbPath });
    let calls = 0;
    const wf = smithers(() => (
      <Workflow name="pricing">
        <Task id="api-call" output={outputs.quote} retries={3} retryPolicy={{ backoff: "exponential", initialDelayMs: 40 }} timeoutMs={5_000}>
          {() => {
            calls++;
            if (calls <= 2) throw new Error("429 Too Many Requests");
            return { price: 12.5 };
          }}
        </Task>
      </Workflow>
    ));
    const events: SmithersEvent[] = [];
    const result = await runWorkflow(wf, { input: {}, onEvent: (e) => events.push(e) });
    expect(result).toMatchObject({ status: "finished", output: { price: 12.5 } });
    const rows = attempts(dbPath, "api-call");
    expect(rows.map((r) => [r.attempt, r.state, r.code])).toEqual([
      [1, "failed", "TASK_FAILED"],
      [2, "failed", "TASK_FAILED"],
      [3, "finished", null],
    ]);
    expect(waits(events, "api-call")).toEqual([40, 80]);
    const [g1, g2] = gaps(rows);
    expect(g1).toBeGreaterThanOrEqual(40);
    expect(g2).toBeGreaterThanOrEqual(80);
  });

  test("a policy without backoff waits initialDelayMs before every retry; linear adds initialDelayMs each time", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, Parallel, smithers, outputs } = createSmithers(schemas, { dbPath });
    const failures = { fixed: 0, linear: 0 };
    const flaky = (key: keyof typeof failures) => () => {
      if (++failures[key] <= 3) throw new Error(`${key} not ready`);
      return { ok: true };
    };
    const wf = smithers(() => (
      <Workflow name="backoffs">
        <Parallel>
          <Task id="fixed" output={outputs.report} retries={3} retryPolicy={{ initialDelayMs: 25 }}>
            {flaky("fixed")}
          </Task>
          <Task id="linear" output={outputs.report} retries={3} retryPolicy={{ backoff: "linear", initialDelayMs: 25 }}>
            {flaky("linear")}
          </Task>
        </Parallel>
      </Workflow>
    ));
    const events: SmithersEvent[] = [];
    expect((await runWorkflow(wf, { input: {}, onEvent: (e) => events.push(e) })).status).toBe("finished");
    expect(waits(events, "fixed")).toEqual([25, 25, 25]);
    expect(waits(events, "linear")).toEqual([25, 50, 75]);
    for (const [nodeId, expected] of [
      ["fixed", [25, 25, 25]],
      ["linear", [25, 50, 75]],
    ] as const) {
      const rows = attempts(dbPath, nodeId);
      expect(rows.map((r) => r.state)).toEqual(["failed", "failed", "failed", "finished"]);
      gaps(rows).forEach((gap, i) => expect(gap).toBeGreaterThanOrEqual(expected[i]!));
    }
  });

  test("retries={0} disables retrying, and noRetry does so whatever retries says: the first failure fails the run", async () => {
    for (const props of [{ retries: 0 }, { noRetry: true, retries: 3 }]) {
      const dbPath = tempDbPath();
      const { Workflow, Task, smithers, outputs } = createSmithers(schemas, { dbPath });
      let calls = 0;
      const wf = smithers(() => (
        <Workflow name="once">
          <Task id="charge" output={outputs.report} {...props}>
            {() => {
              calls++;
              throw new Error("gateway error");
            }}
          </Task>
          <Task id="after" output={outputs.report}>
            {{ ok: true }}
          </Task>
        </Workflow>
      ));
      const result = await runWorkflow(wf, { input: {} });
      expect([result.status, result.error?.code, calls]).toEqual(["failed", "TASK_FAILED", 1]);
      expect(attempts(dbPath, "charge").map((r) => r.state)).toEqual(["failed"]);
      expect(sql(dbPath, "SELECT count(*) AS n FROM report")).toEqual([{ n: 0 }]);
    }
  });

  test("timeoutMs bounds each attempt: a timed-out attempt fails with TASK_TIMEOUT and the retry that answers in time finishes", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers(schemas, { dbPath });
    let calls = 0;
    const wf = smithers(() => (
      <Workflow name="slow-api">
        <Task id="api-call" output={outputs.quote} retries={1} retryPolicy={{ initialDelayMs: 10 }} timeoutMs={50}>
          {async ({ signal }) => {
            if (++calls === 1) await sleepUnlessAborted(10_000, signal);
            return { price: calls };
          }}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result).toMatchObject({ status: "finished", output: { price: 2 } });
    expect(attempts(dbPath, "api-call").map((r) => [r.attempt, r.state, r.code])).toEqual([
      [1, "failed", "TASK_TIMEOUT"],
      [2, "finished", null],
    ]);
  });

  test("a task that used up its retries with continueOnFail lets the pipeline go on", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers(schemas, { dbPath });
    const wf = smithers(() => (
      <Workflow name="optional-lint">
        <Task id="lint" output={outputs.report} continueOnFail retries={2} retryPolicy={{ initialDelayMs: 5 }}>
          {() => {
            throw new Error("linter crashed");
          }}
        </Task>
        <Task id="ship" output={outputs.report}>
          {{ ok: true }}
        </Task>
      </Workflow>
    ));
    expect((await runWorkflow(wf, { input: {} })).status).toBe("finished");
    expect(attempts(dbPath, "lint").map((r) => r.state)).toEqual(["failed", "failed", "failed"]);
    expect(sql(dbPath, "SELECT node_id, state FROM _smithers_nodes ORDER BY node_id")).toEqual([
      { node_id: "lint", state: "failed" },
      { node_id: "ship", state: "finished" },
    ]);
  });
});

describe("smithers-orchestrator: maxSchemaRetries", () => {
  test("by default up to 3 correction calls follow a reply that fails the schema, within one attempt, not counted as retries", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers(schemas, { dbPath });
    const agent = scriptedAgent(["The price is twelve.", '{"price": "12"}', "```json\n{ price: 12 }\n```", '{"price": 12}']);
    const wf = smithers(() => (
      <Workflow name="quote">
        <Task id="quote" output={outputs.quote} agent={agent} retries={0}>
          Quote a price.
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result).toMatchObject({ status: "finished", output: { price: 12 } });
    expect(agent.calls).toHaveLength(4);
    expect(agent.calls[2]!.prompt).toContain("It did not match the schema");
    expect(attempts(dbPath, "quote").map((r) => r.state)).toEqual(["finished"]);
  });

  test("maxSchemaRetries={0} makes no correction call: the first invalid reply fails the attempt with INVALID_OUTPUT", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers(schemas, { dbPath });
    const agent = scriptedAgent(['{"price": "twelve"}', '{"price": 12}']);
    const wf = smithers(() => (
      <Workflow name="quote">
        <Task id="quote" output={outputs.quote} agent={agent} maxSchemaRetries={0} retries={0}>
          Quote a price.
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect([result.status, result.error?.code]).toEqual(["failed", "INVALID_OUTPUT"]);
    expect(agent.calls).toHaveLength(1);
    expect(sql(dbPath, "SELECT count(*) AS n FROM quote")).toEqual([{ n: 0 }]);
  });
});
