/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { approvalDecisionSchema, approve, createSmithers, runWorkflow } from "../../src/index.ts";
import { execute, query, sqliteOnly, statementsRun, tempDbPath } from "../helpers.ts";

describe("runWorkflow", () => {
  test("a run its creator left with the default name (killed before the first render named it) is named by the process that resumes it", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, Approval, smithers, outputs, smithersDb } = createSmithers(
      { approval: approvalDecisionSchema, done: z.object({ ok: z.boolean() }) },
      { dbPath },
    );
    const wf = smithers(() => (
      <Workflow name="named">
        <Approval id="gate" output={outputs.approval} request={{ title: "go?" }} />
        <Task id="after" output={outputs.done}>
          {{ ok: true }}
        </Task>
      </Workflow>
    ));
    // This process learns the name from a first run, as a long-lived worker does.
    const first = await runWorkflow(wf, { input: {} });
    expect(first.status).toBe("waiting-approval");
    // What `smithers up` killed between creating the run and its first step leaves behind.
    await execute(dbPath, "UPDATE _smithers_runs SET workflow_name = 'workflow'");
    await approve(smithersDb, { runId: first.runId, nodeId: "gate" });
    const resumed = await runWorkflow(wf, { runId: first.runId, resume: true });
    expect(resumed.status).toBe("finished");
    expect(await query(dbPath, "SELECT workflow_name FROM _smithers_runs")).toEqual([{ workflow_name: "named" }]);
  });

  sqliteOnly("counts the statements SQLite runs")(
    "a run of static tasks alone stores its name with its final status, in one update of the run row",
    async () => {
      const dbPath = tempDbPath();
      const { Workflow, Task, smithers, outputs, smithersDb } = createSmithers({ done: z.object({ ok: z.boolean() }) }, { dbPath });
      const wf = smithers(() => (
        <Workflow name="static-only">
          <Task id="t" output={outputs.done}>
            {{ ok: true }}
          </Task>
        </Workflow>
      ));
      const texts = statementsRun(smithersDb);
      expect((await runWorkflow(wf, { input: {} })).status).toBe("finished");
      expect(await query(dbPath, "SELECT workflow_name, status FROM _smithers_runs")).toEqual([{ workflow_name: "static-only", status: "finished" }]);
      const nameUpdates = texts.filter((t) => t.startsWith('UPDATE "_smithers_runs"') && t.includes('"workflow_name"'));
      expect(nameUpdates.length).toBe(1);
      expect(nameUpdates[0]).toContain('"status"');
    },
  );

  test("a run whose first step commits on its own (a compute task) stores its name with that step", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ done: z.object({ ok: z.boolean() }) }, { dbPath });
    let nameWhileRunning: unknown;
    const wf = smithers(() => (
      <Workflow name="computed">
        <Task id="t" output={outputs.done}>
          {async () => {
            nameWhileRunning = (await query(dbPath, "SELECT workflow_name FROM _smithers_runs"))[0];
            return { ok: true };
          }}
        </Task>
      </Workflow>
    ));
    expect((await runWorkflow(wf, { input: {} })).status).toBe("finished");
    expect(nameWhileRunning).toEqual({ workflow_name: "computed" });
    expect(await query(dbPath, "SELECT workflow_name FROM _smithers_runs")).toEqual([{ workflow_name: "computed" }]);
  });

  test("a run of static tasks alone that continues as a new one gives its successor its rendered name", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, ContinueAsNew, smithers, outputs } = createSmithers({ done: z.object({ ok: z.boolean() }) }, { dbPath });
    const wf = smithers((ctx) => (
      <Workflow name="continuing">
        <Task id="t" output={outputs.done}>
          {{ ok: true }}
        </Task>
        {(ctx.input as { __smithersContinuation?: unknown }).__smithersContinuation === undefined ? <ContinueAsNew /> : null}
      </Workflow>
    ));
    let successorAtCreation: unknown;
    const result = await runWorkflow(wf, {
      input: {},
      runId: "c",
      // Heard once the first run's last transaction committed, before the successor's first step names it itself.
      onEvent: (event) => {
        if (event.type === "RunContinuedAsNew") successorAtCreation = query(dbPath, "SELECT workflow_name FROM _smithers_runs WHERE run_id = 'c~1'");
      },
    });
    expect(result).toMatchObject({ runId: "c~1", status: "finished" });
    expect(await successorAtCreation).toEqual([{ workflow_name: "continuing" }]);
    expect(await query(dbPath, "SELECT run_id, workflow_name FROM _smithers_runs ORDER BY run_id")).toEqual([
      { run_id: "c", workflow_name: "continuing" },
      { run_id: "c~1", workflow_name: "continuing" },
    ]);
  });
});
