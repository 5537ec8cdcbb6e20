/** @jsxImportSource smithers-workflows */
import { expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers, runWorkflow } from "../../src/index.ts";
import { query, tempDbPath } from "../helpers.ts";

test("graceMs: Infinity waits for a stopped body instead of abandoning it at once", async () => {
  const dbPath = tempDbPath();
  const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ v: z.number() }) }, { dbPath });
  let running = 0,
    maxRunning = 0;
  const wf = smithers(() => (
    <Workflow name="w">
      <Task id="t" output={outputs.out} timeoutMs={20} retries={1} retryPolicy={{ initialDelayMs: 1, maxDelayMs: 1 }}>
        {async () => {
          running++;
          maxRunning = Math.max(maxRunning, running);
          await Bun.sleep(150);
          running--;
          return { v: 1 };
        }}
      </Task>
    </Workflow>
  ));
  const result = await runWorkflow(wf, { input: {}, graceMs: Infinity });
  const states = (await query<{ state: string }>(dbPath, "SELECT state FROM _smithers_attempts ORDER BY attempt")).map((r) => r.state);
  expect(result.error?.code).toBe("TASK_TIMEOUT");
  expect(states).toEqual(["failed", "failed"]);
  expect(maxRunning).toBe(1);
});
