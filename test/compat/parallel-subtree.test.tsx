/** @jsxImportSource smithers-workflows */
/** `<Parallel subtreeConcurrency>` as smithers-orchestrator's <Parallel> documentation describes it, in our own words. */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers, Parallel, runWorkflow, Sequence } from "../../src/index.ts";
import { sql, tempDbPath } from "../helpers.ts";

describe("<Parallel subtreeConcurrency>", () => {
  test("caps the direct children in flight: a ticket (implement, then review) is in flight from its first task to its last", async () => {
    const { Workflow, Task, smithers, outputs } = createSmithers({ step: z.object({ ticket: z.string() }) }, { dbPath: tempDbPath() });
    const inFlight = new Set<string>();
    let most = 0;
    const log: string[] = [];
    const tickets = ["t1", "t2", "t3", "t4", "t5"];
    const step = (ticket: string, phase: "implement" | "review") => async () => {
      if (phase === "implement") inFlight.add(ticket);
      most = Math.max(most, inFlight.size);
      log.push(`${ticket}:${phase}`);
      await Bun.sleep(10);
      if (phase === "review") inFlight.delete(ticket);
      return { ticket };
    };
    const wf = smithers(() => (
      <Workflow name="kanban">
        <Parallel subtreeConcurrency={2}>
          {tickets.map((t) => (
            <Sequence key={t}>
              <Task id={`${t}-implement`} output={outputs.step}>
                {step(t, "implement")}
              </Task>
              <Task id={`${t}-review`} output={outputs.step}>
                {step(t, "review")}
              </Task>
            </Sequence>
          ))}
        </Parallel>
      </Workflow>
    ));
    expect((await runWorkflow(wf, { input: {} })).status).toBe("finished");
    expect(most).toBe(2);
    // Admission is in document order: t3 starts only once t1 or t2 is over.
    expect(log.indexOf("t3:implement")).toBeGreaterThan(Math.min(log.indexOf("t1:review"), log.indexOf("t2:review")));
    expect(log.filter((l) => l.endsWith(":review"))).toHaveLength(5);
  });

  test("a child still waiting on a dependency does not hold a slot: the sibling it waits for is admitted", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ step: z.object({ n: z.number() }) }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="wait-for-sibling">
        <Parallel subtreeConcurrency={1}>
          <Task id="x" output={outputs.step} dependsOn={["y"]}>
            {{ n: 2 }}
          </Task>
          <Task id="y" output={outputs.step}>
            {{ n: 1 }}
          </Task>
        </Parallel>
      </Workflow>
    ));
    expect((await runWorkflow(wf, { input: {} })).status).toBe("finished");
    expect(sql(dbPath, "SELECT node_id FROM step ORDER BY node_id")).toEqual([{ node_id: "x" }, { node_id: "y" }]);
  });

  test("a subtreeConcurrency below 1 or not an integer fails the render with INVALID_WORKFLOW", async () => {
    const { Workflow, Task, smithers, outputs } = createSmithers({ step: z.object({ n: z.number() }) }, { dbPath: tempDbPath() });
    for (const bad of [0, 1.5, "2"]) {
      const wf = smithers(() => (
        <Workflow name="bad">
          <Parallel subtreeConcurrency={bad as number}>
            <Task id="a" output={outputs.step}>
              {{ n: 1 }}
            </Task>
          </Parallel>
        </Workflow>
      ));
      expect((await runWorkflow(wf, { input: {} })).error?.code).toBe("INVALID_WORKFLOW");
    }
  });
});
