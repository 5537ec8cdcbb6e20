/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers, runWorkflow } from "../../src/index.ts";
import { query, tempDbPath } from "../helpers.ts";

describe("a long loop", () => {
  test("a task that depends on an id mounted only in an earlier, finished iteration still runs", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, Loop, smithers, outputs } = createSmithers({ step: z.object({ n: z.number() }) }, { dbPath });
    const wf = smithers((ctx) => (
      <Workflow name="first-only">
        <Loop id="l" until={ctx.iterationCount(outputs.step, "every") >= 4} maxIterations={10}>
          {ctx.iteration === 0 ? (
            <Task id="seed" output={outputs.step}>
              {{ n: 0 }}
            </Task>
          ) : null}
          <Task id="every" output={outputs.step} dependsOn={ctx.iteration === 0 ? [] : ["seed"]}>
            {{ n: ctx.iteration }}
          </Task>
        </Loop>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.status).toBe("finished");
    expect(await query(dbPath, "SELECT node_id, iteration FROM step ORDER BY node_id, iteration")).toEqual([
      { node_id: "every", iteration: 0 },
      { node_id: "every", iteration: 1 },
      { node_id: "every", iteration: 2 },
      { node_id: "every", iteration: 3 },
      { node_id: "seed", iteration: 0 },
    ]);
  });

  test("a run that ends in a loop returns the loop's last row", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, Loop, smithers, outputs } = createSmithers({ step: z.object({ n: z.number() }) }, { dbPath });
    const wf = smithers((ctx) => (
      <Workflow name="ends-in-loop">
        <Loop id="l" until={ctx.iterationCount(outputs.step, "s") >= 50} maxIterations={100}>
          <Task id="s" output={outputs.step}>
            {{ n: ctx.iteration * 2 }}
          </Task>
        </Loop>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result).toMatchObject({ status: "finished", output: { n: 98 } });
  });

  test("resumed after a failure in a later iteration, the loop still finds the id mounted only in its first iteration", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, Loop, smithers, outputs } = createSmithers({ step: z.object({ n: z.number() }) }, { dbPath });
    let failAtTwo = true;
    const wf = smithers((ctx) => (
      <Workflow name="first-only-resumed">
        <Loop id="l" until={ctx.iterationCount(outputs.step, "every") >= 4} maxIterations={10}>
          {ctx.iteration === 0 ? (
            <Task id="seed" output={outputs.step}>
              {{ n: 0 }}
            </Task>
          ) : null}
          <Task id="every" output={outputs.step} dependsOn={ctx.iteration === 0 ? [] : ["seed"]} retries={0}>
            {() => {
              if (ctx.iteration === 2 && failAtTwo) throw new Error("not this time");
              return { n: ctx.iteration };
            }}
          </Task>
        </Loop>
      </Workflow>
    ));
    const first = await runWorkflow(wf, { input: {}, runId: "loop-r" });
    expect(first.status).toBe("failed");
    failAtTwo = false;
    const resumed = await runWorkflow(wf, { runId: "loop-r", resume: true });
    expect(resumed.status).toBe("finished");
    expect(await query(dbPath, "SELECT count(*) AS n FROM step WHERE node_id = 'every'")).toEqual([{ n: 4 }]);
  });
});
