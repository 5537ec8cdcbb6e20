/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { approvalDecisionSchema, approve, createSmithers, runWorkflow } from "../../src/index.ts";
import { execute, query, tempDbPath } from "../helpers.ts";

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
});
