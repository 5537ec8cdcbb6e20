/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers } from "smithers-workflows";
import { testWorkflow } from "smithers-workflows/testing";

describe("WorkflowTest.cron", () => {
  test("an hourly schedule starts one run per slot the clock passes, each with the schedule's input", async () => {
    const { Workflow, Task, smithers, outputs } = createSmithers({
      input: z.object({ team: z.string() }),
      report: z.object({ text: z.string() }),
    });
    const workflow = smithers((ctx) => (
      <Workflow name="report">
        <Task id="report" output={outputs.report}>
          {{ text: `report for ${ctx.input.team}` }}
        </Task>
      </Workflow>
    ));
    await using t = await testWorkflow(workflow);
    const schedule = await t.cron("0 * * * *", { cronId: "hourly", input: { team: "infra" } });
    expect(schedule.nextRunAtMs).toBe(Date.UTC(2026, 0, 1, 1));
    await t.clock.advance(59 * 60_000);
    expect(await t.runs()).toEqual([]);
    await t.clock.advance(3 * 3_600_000);
    const ran = await t.runs();
    expect(ran.map((r) => [r.runId, r.status])).toEqual([3, 2, 1].map((h) => [`cron:hourly:${Date.UTC(2026, 0, 1, h)}`, "finished"]));
    expect(t.output(ran[0]!.runId, "report")).toEqual({ text: "report for infra" });
  });
});
