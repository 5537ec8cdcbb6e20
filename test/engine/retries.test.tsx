/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers, FatalError, RetryableError, runWorkflow, SmithersError, scriptedAgent, type SmithersEvent } from "../../src/index.ts";
import { execute, query, tempDbPath } from "../helpers.ts";

type AttemptRow = { attempt: number; state: string; started_at_ms: number; finished_at_ms: number; code: string | null };

async function attemptsOf(dbPath: string, nodeId = "t"): Promise<AttemptRow[]> {
  const rows = await query<Omit<AttemptRow, "code"> & { error_json: string | null }>(
    dbPath,
    "SELECT attempt, state, started_at_ms, finished_at_ms, error_json FROM _smithers_attempts WHERE node_id = ? ORDER BY attempt",
    nodeId,
  );
  return rows.map(({ error_json, ...row }) => ({ ...row, code: error_json === null ? null : (JSON.parse(error_json).code ?? null) }));
}

const retrying = (events: SmithersEvent[]) =>
  events.filter((e): e is Extract<SmithersEvent, { type: "NodeRetrying" }> => e.type === "NodeRetrying").map((e) => [e.attempt, e.delayMs]);

function kit() {
  const dbPath = tempDbPath();
  // Not spread: a spread reads every getter, and the kit's `db` (the SQLite Drizzle handle) throws DB_UNSUPPORTED on PostgreSQL.
  const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
  return { dbPath, Workflow, Task, smithers, outputs };
}

/** Marks a stopped run as one whose process died (running, owner gone), so resume treats it as a crash. */
async function asCrashed(dbPath: string): Promise<void> {
  await execute(
    dbPath,
    "UPDATE _smithers_runs SET status = 'running', runtime_owner_id = 'elsewhere:999999:x', heartbeat_at_ms = 0, error_json = NULL, finished_at_ms = NULL",
  );
}

describe("task retries", () => {
  test("a compute task without retries runs 1 + 3 attempts, then fails the run with the task's error", async () => {
    const { dbPath, Workflow, Task, smithers, outputs } = kit();
    let calls = 0;
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="t" output={outputs.out} retryPolicy={{ initialDelayMs: 0 }}>
          {() => {
            calls++;
            throw new Error("down");
          }}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect([result.status, result.error?.code]).toEqual(["failed", "TASK_FAILED"]);
    expect(calls).toBe(4);
    expect((await attemptsOf(dbPath)).map((a) => [a.attempt, a.state, a.code])).toEqual([
      [1, "failed", "TASK_FAILED"],
      [2, "failed", "TASK_FAILED"],
      [3, "failed", "TASK_FAILED"],
      [4, "failed", "TASK_FAILED"],
    ]);
    expect(await query(dbPath, "SELECT state, last_attempt, wake_at_ms FROM _smithers_nodes")).toEqual([
      { state: "failed", last_attempt: 4, wake_at_ms: null },
    ]);
  });

  test("without a retryPolicy the first retry waits 1 s: the wait is in the NodeRetrying event and stored as the node's wake time", async () => {
    const { dbPath, Workflow, Task, smithers, outputs } = kit();
    const controller = new AbortController();
    const events: SmithersEvent[] = [];
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="t" output={outputs.out}>
          {() => {
            throw new Error("down");
          }}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, {
      input: {},
      signal: controller.signal,
      onEvent: (e) => {
        events.push(e);
        if (e.type === "NodeRetrying") controller.abort();
      },
    });
    expect(result.status).toBe("cancelled");
    const retry = events.find((e) => e.type === "NodeRetrying") as Extract<SmithersEvent, { type: "NodeRetrying" }>;
    expect([retry.attempt, retry.delayMs]).toEqual([2, 1_000]);
    const [first] = await attemptsOf(dbPath);
    expect(retry.retryAtMs - first!.finished_at_ms).toBeGreaterThanOrEqual(1_000);
    expect(await query(dbPath, "SELECT state, wake_at_ms FROM _smithers_nodes")).toEqual([{ state: "pending", wake_at_ms: retry.retryAtMs }]);
    expect(await attemptsOf(dbPath)).toHaveLength(1);
  });

  test("a cancel that arrives as a retry is scheduled ends the run at once, not after the wait", async () => {
    const { dbPath, Workflow, Task, smithers, outputs } = kit();
    const controller = new AbortController();
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="t" output={outputs.out} retryPolicy={{ initialDelayMs: 600_000 }}>
          {() => {
            throw new Error("down");
          }}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {}, signal: controller.signal, onEvent: (e) => e.type === "NodeRetrying" && controller.abort() });
    expect(result.status).toBe("cancelled");
    expect((await attemptsOf(dbPath)).map((a) => a.state)).toEqual(["failed"]);
  });

  test("a static output that fails its schema is not retried by default: it would fail the same way", async () => {
    const { dbPath, Workflow, Task, smithers, outputs } = kit();
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="t" output={outputs.out}>
          {{ n: "seven" } as unknown as { n: number }}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.error?.code).toBe("INVALID_OUTPUT");
    expect((await attemptsOf(dbPath)).map((a) => a.state)).toEqual(["failed"]);
  });

  test("noRetry runs one attempt even with retries given", async () => {
    const { dbPath, Workflow, Task, smithers, outputs } = kit();
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="t" output={outputs.out} noRetry retries={5} retryPolicy={{ initialDelayMs: 0 }}>
          {() => {
            throw new Error("down");
          }}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.status).toBe("failed");
    expect((await attemptsOf(dbPath)).map((a) => a.state)).toEqual(["failed"]);
  });

  test("a FatalError is never retried, not even with retries={Infinity}", async () => {
    const { dbPath, Workflow, Task, smithers, outputs } = kit();
    const events: SmithersEvent[] = [];
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="t" output={outputs.out} retries={Infinity} retryPolicy={{ initialDelayMs: 0 }}>
          {() => {
            throw new FatalError("card declined");
          }}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {}, onEvent: (e) => events.push(e) });
    expect([result.status, result.error?.message]).toEqual(["failed", 'Task "t" failed: card declined']);
    expect((await attemptsOf(dbPath)).map((a) => a.state)).toEqual(["failed"]);
    expect(retrying(events)).toEqual([]);
  });

  test("a RetryableError's retryAfterMs replaces the policy's wait", async () => {
    const { dbPath, Workflow, Task, smithers, outputs } = kit();
    const events: SmithersEvent[] = [];
    let calls = 0;
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="t" output={outputs.out} retries={2} retryPolicy={{ backoff: "fixed", initialDelayMs: 600_000 }}>
          {() => {
            if (++calls < 3) throw new RetryableError("rate limited", { retryAfterMs: 5 });
            return { n: calls };
          }}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {}, onEvent: (e) => events.push(e) });
    expect(result).toMatchObject({ status: "finished", output: { n: 3 } });
    expect(retrying(events)).toEqual([
      [2, 5],
      [3, 5],
    ]);
    const [a1, a2] = await attemptsOf(dbPath);
    expect(a2!.started_at_ms - a1!.finished_at_ms).toBeGreaterThanOrEqual(5);
  });

  test("an agent's rate limit (AGENT_RATE_LIMITED with details.retryAfterMs) is retried after the delay it suggests, not the policy's", async () => {
    const { Workflow, Task, smithers, outputs } = kit();
    const events: SmithersEvent[] = [];
    let calls = 0;
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="t" output={outputs.out} retries={2} retryPolicy={{ backoff: "fixed", initialDelayMs: 600_000 }}>
          {() => {
            if (++calls < 2) throw new SmithersError("AGENT_RATE_LIMITED", "429 from the provider", { retryAfterMs: 7 });
            return { n: calls };
          }}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {}, onEvent: (e) => events.push(e) });
    expect(result).toMatchObject({ status: "finished", output: { n: 2 } });
    expect(retrying(events)).toEqual([[2, 7]]);
  });

  test("an agent's model-not-found and root refusal are not retried", async () => {
    for (const code of ["AGENT_MODEL_NOT_FOUND", "AGENT_ROOT_REFUSED"] as const) {
      const { Workflow, Task, smithers, outputs } = kit();
      let calls = 0;
      const wf = smithers(() => (
        <Workflow name="w">
          <Task id="t" output={outputs.out} retries={3}>
            {() => {
              calls++;
              throw new SmithersError(code, "no");
            }}
          </Task>
        </Workflow>
      ));
      calls = 0;
      const result = await runWorkflow(wf, { input: {} });
      expect({ code, status: result.status, calls }).toEqual({ code, status: "failed", calls: 1 });
    }
  });

  test("retries={Infinity} retries until the task succeeds, also after the run was cancelled and resumed", async () => {
    const { dbPath, Workflow, Task, smithers, outputs } = kit();
    const controller = new AbortController();
    let calls = 0;
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="t" output={outputs.out} retries={Infinity} retryPolicy={{ backoff: "exponential", initialDelayMs: 0 }}>
          {() => {
            if (++calls === 10) controller.abort();
            if (calls < 25) throw new Error(`failure ${calls}`);
            return { n: calls };
          }}
        </Task>
      </Workflow>
    ));
    const first = await runWorkflow(wf, { input: {}, signal: controller.signal });
    expect(first.status).toBe("cancelled");
    const resumed = await runWorkflow(wf, { runId: first.runId, resume: true });
    expect(resumed).toMatchObject({ status: "finished", output: { n: 25 } });
    const attempts = await attemptsOf(dbPath);
    expect(attempts).toHaveLength(25);
    expect(attempts.at(-1)!.state).toBe("finished");
    expect(attempts.slice(0, -1).every((a) => a.state === "failed" || a.state === "cancelled")).toBe(true);
  });

  test("a run that crashed while a task waited to retry keeps the stored wait on resume", async () => {
    const { dbPath, Workflow, Task, smithers, outputs } = kit();
    const controller = new AbortController();
    let calls = 0;
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="t" output={outputs.out} retries={Infinity} retryPolicy={{ backoff: "fixed", initialDelayMs: 300 }}>
          {() => {
            if (++calls === 1) throw new Error("first try fails");
            return { n: calls };
          }}
        </Task>
      </Workflow>
    ));
    const first = await runWorkflow(wf, { input: {}, signal: controller.signal, onEvent: (e) => e.type === "NodeRetrying" && controller.abort() });
    expect(first.status).toBe("cancelled");
    const retryAtMs = (await query<{ wake_at_ms: number }>(dbPath, "SELECT wake_at_ms FROM _smithers_nodes"))[0]!.wake_at_ms;
    await asCrashed(dbPath);
    const resumed = await runWorkflow(wf, { runId: first.runId, resume: true });
    expect(resumed.status).toBe("finished");
    const [a1, a2] = await attemptsOf(dbPath);
    expect(a1!.state).toBe("failed");
    expect(a2!.started_at_ms).toBeGreaterThanOrEqual(retryAtMs);
    expect(retryAtMs - a1!.finished_at_ms).toBeGreaterThanOrEqual(300);
  });

  test("maxSchemaRetries sets the correction calls within one attempt: 1 makes two calls, 0 one", async () => {
    for (const [maxSchemaRetries, calls] of [
      [1, 2],
      [0, 1],
    ] as const) {
      const { dbPath, Workflow, Task, smithers, outputs } = kit();
      const agent = scriptedAgent(() => "no JSON, sorry");
      const wf = smithers(() => (
        <Workflow name="w">
          <Task id="t" output={outputs.out} agent={agent} maxSchemaRetries={maxSchemaRetries} noRetry>
            Give me n
          </Task>
        </Workflow>
      ));
      const result = await runWorkflow(wf, { input: {} });
      expect(result.error?.code).toBe("INVALID_OUTPUT");
      expect(agent.calls).toHaveLength(calls);
      expect((await attemptsOf(dbPath)).map((a) => a.state)).toEqual(["failed"]);
    }
  });

  test("an invalid retry setting fails the run before any attempt, naming the prop", async () => {
    for (const bad of [
      { retries: -1 },
      { retries: 1.5 },
      { retryPolicy: { backoff: "sometimes" } },
      { retryPolicy: { initialDelayMs: -10 } },
      { maxSchemaRetries: -1 },
    ]) {
      const { dbPath, Workflow, Task, smithers, outputs } = kit();
      let calls = 0;
      const wf = smithers(() => (
        <Workflow name="w">
          <Task id="t" output={outputs.out} {...(bad as object)}>
            {() => ({ n: ++calls })}
          </Task>
        </Workflow>
      ));
      const result = await runWorkflow(wf, { input: {} });
      expect([result.status, result.error?.code]).toEqual(["failed", "INVALID_WORKFLOW"]);
      expect(result.error?.details.prop).toBe(
        Object.keys(bad)[0] === "retryPolicy" ? `retryPolicy.${Object.keys(Object.values(bad)[0] as object)[0]}` : Object.keys(bad)[0],
      );
      expect(calls).toBe(0);
      expect(await query(dbPath, "SELECT (SELECT count(*) FROM _smithers_attempts) AS attempts, (SELECT count(*) FROM out) AS rows")).toEqual([
        { attempts: 0, rows: 0 },
      ]);
    }
  });
});
