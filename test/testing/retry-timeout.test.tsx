/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers } from "smithers-workflows";
import { testWorkflow } from "smithers-workflows/testing";

const TEN_MINUTES = 600_000;

describe("testWorkflow: retries and timeouts on the virtual clock", () => {
  test("a failed task waits out its 10-minute backoff on the clock, then its retry finishes the run", async () => {
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ attempt: z.number() }) });
    let calls = 0;
    const workflow = smithers(() => (
      <Workflow name="flaky">
        <Task id="call" output={outputs.out} retries={1} retryPolicy={{ backoff: "fixed", initialDelayMs: TEN_MINUTES, maxDelayMs: TEN_MINUTES }}>
          {() => {
            calls++;
            if (calls === 1) throw new Error("the service is down");
            return { attempt: calls };
          }}
        </Task>
      </Workflow>
    ));
    await using t = await testWorkflow(workflow);
    const started = performance.now();
    const run = await t.run();
    expect(run.status).toBe("running");
    expect(calls).toBe(1);
    await t.clock.advance(TEN_MINUTES - 1);
    expect(calls).toBe(1);
    await t.clock.advance(1);
    expect(calls).toBe(2);
    expect(await t.resume(run.runId)).toMatchObject({ status: "finished" });
    expect(t.output(run.runId, "call")).toEqual({ attempt: 2 });
    expect(t.events(run.runId).find((e) => e.type === "NodeRetrying")).toMatchObject({ delayMs: TEN_MINUTES, retryAtMs: Date.UTC(2026, 0, 1) + TEN_MINUTES });
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  test("a task that outlives its timeoutMs fails with TASK_TIMEOUT when the clock passes it, not before", async () => {
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ ok: z.boolean() }) });
    const workflow = smithers(() => (
      <Workflow name="slow">
        <Task id="slow" output={outputs.out} timeoutMs={30_000} noRetry>
          {({ signal }) => new Promise<{ ok: boolean }>((_resolve, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }))}
        </Task>
      </Workflow>
    ));
    await using t = await testWorkflow(workflow);
    const pending = t.run(); // the task runs until its timeout: run() returns once the clock passed it
    await t.clock.advance(29_999);
    expect(t.events((await t.runs())[0]!.runId).some((e) => e.type === "NodeFailed")).toBe(false);
    await t.clock.advance(1);
    const run = await pending;
    expect(run.status).toBe("failed");
    expect(run.error?.code).toBe("TASK_TIMEOUT");
  });
});
