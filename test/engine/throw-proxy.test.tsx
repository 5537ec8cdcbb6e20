/** @jsxImportSource smithers-workflows */
import { expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers, runWorkflow } from "../../src/index.ts";
import { query, tempDbPath } from "../helpers.ts";

test("a task that throws a revoked Proxy ends the run failed instead of hanging it `running`", async () => {
  const dbPath = tempDbPath();
  const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ v: z.number() }) }, { dbPath });
  const wf = smithers(() => (
    <Workflow name="w">
      <Task id="t" output={outputs.out} retries={0}>
        {async () => {
          const r = Proxy.revocable({}, {});
          r.revoke();
          throw r.proxy;
        }}
      </Task>
    </Workflow>
  ));
  const outcome = await Promise.race([
    runWorkflow(wf, { input: {} }).then(
      (r) => r.status,
      (e) => `rejected: ${e}`,
    ),
    Bun.sleep(2_000).then(() => "still pending"),
  ]);
  expect(outcome).toBe("failed");
  expect(await query(dbPath, "SELECT status FROM _smithers_runs")).toEqual([{ status: "failed" }]);
});
