/** @jsxImportSource smithers-workflows */
import { expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers, runWorkflow } from "../../src/index.ts";
import { query, tempDbPath } from "../helpers.ts";

test("a render that throws after a task settled still closes that task's attempt", async () => {
  const dbPath = tempDbPath();
  const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ v: z.number() }) }, { dbPath });
  const wf = smithers((ctx) => {
    if (ctx.outputMaybe(outputs.out, { nodeId: "a" })) throw new Error("build broke on a's output");
    return (
      <Workflow name="w">
        <Task id="a" output={outputs.out}>
          {async () => ({ v: 1 })}
        </Task>
        <Task id="b" output={outputs.out}>
          {async () => ({ v: 2 })}
        </Task>
      </Workflow>
    );
  });
  const result = await runWorkflow(wf, { input: {} });
  expect(result.status).toBe("failed");
  const attempts = await query<{ node_id: string; state: string }>(dbPath, "SELECT node_id, state FROM _smithers_attempts");
  const runs = await query<{ status: string }>(dbPath, "SELECT status FROM _smithers_runs");
  expect(runs[0]!.status).toBe("failed");
  expect(attempts).toEqual([{ node_id: "a", state: "finished" }]);
});
