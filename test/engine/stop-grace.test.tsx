/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers, runWorkflow, type SmithersEvent } from "../../src/index.ts";
import { databaseExists, query, tempDbPath } from "../helpers.ts";

const fast = { initialDelayMs: 1, maxDelayMs: 1 };

/** A body that ignores its abort signal, counting how many of its kind run at once. */
function stubbornBodies(sleepMs: number) {
  const stats = { running: 0, maxRunning: 0, started: 0, settled: 0 };
  const body = async () => {
    stats.started++;
    stats.running++;
    stats.maxRunning = Math.max(stats.maxRunning, stats.running);
    await Bun.sleep(sleepMs);
    stats.running--;
    stats.settled++;
    return { v: 1 };
  };
  return { stats, body };
}

describe("a stopped attempt", () => {
  test("a timed-out body that ignores its signal settles before the retry starts: never two bodies of one task at once", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ v: z.number() }) }, { dbPath });
    const { stats, body } = stubbornBodies(120);
    const wf = smithers(() => (
      <Workflow name="stubborn">
        <Task id="t" output={outputs.out} timeoutMs={30} retries={2} retryPolicy={fast}>
          {body}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("TASK_TIMEOUT");
    expect(stats.started).toBe(3);
    expect(stats.maxRunning).toBe(1);
    expect(stats.settled).toBe(3); // the run ended only after its bodies did
    const attempts = await query<{ attempt: number; state: string; error_json: string }>(
      dbPath,
      "SELECT attempt, state, error_json FROM _smithers_attempts ORDER BY attempt",
    );
    expect(attempts.map((a) => [a.attempt, a.state, JSON.parse(a.error_json).code])).toEqual([
      [1, "failed", "TASK_TIMEOUT"],
      [2, "failed", "TASK_TIMEOUT"],
      [3, "failed", "TASK_TIMEOUT"],
    ]);
  });

  test("an agent call that ignores its abort settles before the retry's call starts", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ v: z.number() }) }, { dbPath });
    const stats = { running: 0, maxRunning: 0, calls: 0 };
    const deafAgent = {
      async generate() {
        stats.calls++;
        stats.running++;
        stats.maxRunning = Math.max(stats.maxRunning, stats.running);
        await Bun.sleep(100);
        stats.running--;
        return { text: '{"v":1}' };
      },
    };
    const wf = smithers(() => (
      <Workflow name="deaf-agent">
        <Task id="ask" output={outputs.out} agent={deafAgent} timeoutMs={30} retries={2} retryPolicy={fast}>
          Give me v
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.error?.code).toBe("TASK_TIMEOUT");
    expect(stats.calls).toBe(3);
    expect(stats.maxRunning).toBe(1);
    expect(stats.running).toBe(0);
  });

  test("a stopped body that reaches ctx.sideEffect does not make the call: the key is never run twice", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ v: z.number() }) }, { dbPath });
    let calls = 0;
    const wf = smithers(() => (
      <Workflow name="charge">
        <Task id="pay" output={outputs.out} timeoutMs={30} retries={2} retryPolicy={fast}>
          {async (ctx) => {
            await Bun.sleep(80); // ignores the timeout's abort
            await ctx.sideEffect("charge", () => {
              calls++;
              return "ok";
            });
            return { v: 1 };
          }}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.status).toBe("failed");
    expect(calls).toBe(0);
    expect(await query(dbPath, "SELECT count(*) AS n FROM _smithers_tool_calls")).toEqual([{ n: 0 }]);
  });

  test("a body still running after the grace period is recorded abandoned, with an event saying it may still run", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ v: z.number() }) }, { dbPath });
    const { stats, body } = stubbornBodies(1_000);
    const events: SmithersEvent[] = [];
    const wf = smithers(() => (
      <Workflow name="stuck">
        <Task id="t" output={outputs.out} timeoutMs={20} retries={1} retryPolicy={fast}>
          {body}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {}, graceMs: 40, onEvent: (e) => events.push(e) });
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("TASK_TIMEOUT");
    const attempts = await query<{ state: string; error_json: string }>(dbPath, "SELECT state, error_json FROM _smithers_attempts ORDER BY attempt");
    expect(attempts.map((a) => a.state)).toEqual(["abandoned", "abandoned"]);
    expect(JSON.parse(attempts[0]!.error_json)).toMatchObject({ code: "TASK_TIMEOUT", bodyMayBeRunning: true, graceMs: 40 });
    const abandoned = events.filter((e) => e.type === "NodeAbandoned");
    expect(abandoned.map((e) => [e.nodeId, e.attempt, e.reason])).toEqual([
      ["t", 1, "body-unsettled"],
      ["t", 2, "body-unsettled"],
    ]);
    expect(stats.settled).toBe(0); // the run did not wait for them past the grace period
    const stored = await query<{ type: string }>(dbPath, "SELECT type FROM _smithers_events WHERE type = 'NodeAbandoned'");
    expect(stored).toHaveLength(2);
  });

  test("a cancel waits for a body that honours its signal and records the attempt cancelled", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ v: z.number() }) }, { dbPath });
    const controller = new AbortController();
    let bodyEnded = false;
    const wf = smithers(() => (
      <Workflow name="polite">
        <Task id="t" output={outputs.out}>
          {async (ctx) => {
            setTimeout(() => controller.abort(), 10);
            await new Promise((resolve) => ctx.signal.addEventListener("abort", () => setTimeout(resolve, 30), { once: true }));
            bodyEnded = true;
            return { v: 1 };
          }}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {}, signal: controller.signal });
    expect(result.status).toBe("cancelled");
    expect(bodyEnded).toBe(true);
    expect(await query(dbPath, "SELECT state FROM _smithers_attempts")).toEqual([{ state: "cancelled" }]);
  });

  test("a cancel of a body that ignores its signal ends the run after the grace period with the attempt abandoned", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ v: z.number() }) }, { dbPath });
    const controller = new AbortController();
    const { body } = stubbornBodies(2_000);
    const wf = smithers(() => (
      <Workflow name="deaf">
        <Task id="t" output={outputs.out}>
          {async () => {
            setTimeout(() => controller.abort(), 10);
            return body();
          }}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {}, signal: controller.signal, graceMs: 30 });
    expect(result.status).toBe("cancelled");
    const attempts = await query<{ state: string; error_json: string }>(dbPath, "SELECT state, error_json FROM _smithers_attempts");
    expect(attempts.map((a) => [a.state, JSON.parse(a.error_json).code])).toEqual([["abandoned", "TASK_CANCELLED"]]);
    expect(await query(dbPath, "SELECT state FROM _smithers_nodes")).toEqual([{ state: "cancelled" }]);
  });

  test("an attempt cancelled before its body began never runs the body", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ v: z.number() }) }, { dbPath });
    const controller = new AbortController();
    let bodies = 0;
    const wf = smithers(() => (
      <Workflow name="early">
        <Task id="t" output={outputs.out}>
          {async () => {
            bodies++;
            return { v: 1 };
          }}
        </Task>
      </Workflow>
    ));
    // Listeners hear NodeStarted once its transaction committed, before the body is started.
    const result = await runWorkflow(wf, { input: {}, signal: controller.signal, onEvent: (e) => e.type === "NodeStarted" && controller.abort() });
    expect(result.status).toBe("cancelled");
    expect(bodies).toBe(0);
    expect(await query(dbPath, "SELECT state FROM _smithers_attempts")).toEqual([{ state: "cancelled" }]);
  });

  test("a negative or non-numeric graceMs is rejected with INVALID_OPTION before anything is written", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ v: z.number() }) }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="g">
        <Task id="t" output={outputs.out}>
          {{ v: 1 }}
        </Task>
      </Workflow>
    ));
    for (const graceMs of [-1, Number.NaN, "10" as unknown as number]) {
      const error = await runWorkflow(wf, { input: {}, graceMs }).then(
        () => undefined,
        (e: unknown) => e as { code?: string },
      );
      expect(error?.code).toBe("INVALID_OPTION");
    }
    expect(await databaseExists(dbPath)).toBe(false); // rejected before the database was even opened
  });
});
