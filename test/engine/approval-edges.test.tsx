/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { approvalDecisionSchema, approvalSelectionSchema, approve, createSmithers, deny, openSmithersDb, runWorkflow, Subflow } from "../../src/index.ts";
import { approvals } from "../../src/db/index.ts";
import { supervise } from "../../src/engine/index.ts";
import { formatEvent } from "../../src/cli/progress.ts";
import { execute, onPostgres, query, tablesReady, tempDbPath } from "../helpers.ts";

describe("deciding gates: edges", () => {
  test("a child run's gate with the same node id does not hide the run's own gate", async () => {
    const dbPath = tempDbPath();
    const child = createSmithers({ approval: approvalDecisionSchema });
    const childWf = child.smithers(() => (
      <child.Workflow name="child">
        <child.Approval id="review" output={child.outputs.approval} request={{ title: "child review" }} />
      </child.Workflow>
    ));
    const kit = createSmithers({ approval: approvalDecisionSchema }, { dbPath });
    const wf = kit.smithers(() => (
      <kit.Workflow name="parent">
        <kit.Parallel>
          <kit.Approval id="review" output={kit.outputs.approval} request={{ title: "parent review" }} async />
          <Subflow id="sub" workflow={childWf} output={kit.outputs.approval} />
        </kit.Parallel>
      </kit.Workflow>
    ));
    expect((await runWorkflow(wf, { input: {}, runId: "p" })).status).toBe("waiting-approval");
    expect(await approve(kit.smithersDb, { runId: "p", nodeId: "review" })).toMatchObject({ runId: "p", nodeId: "review" });
    expect(await approve(kit.smithersDb, { runId: "p", nodeId: "review" })).toMatchObject({ runId: "p/sub#0", nodeId: "review" });
    expect(await query(dbPath, "SELECT run_id, status FROM _smithers_approvals ORDER BY run_id")).toEqual([
      { run_id: "p", status: "approved" },
      { run_id: "p/sub#0", status: "approved" },
    ]);
  });

  test("the adapter's decideApproval makes the run due too, and opening a database backfills gates decided before that", async () => {
    const dbPath = tempDbPath();
    const kit = createSmithers({ approval: approvalDecisionSchema }, { dbPath });
    const wf = kit.smithers(() => (
      <kit.Workflow name="gate">
        <kit.Approval id="g" output={kit.outputs.approval} request={{ title: "ok?" }} />
      </kit.Workflow>
    ));
    for (const runId of ["a", "b"]) expect((await runWorkflow(wf, { input: {}, runId })).status).toBe("waiting-approval");
    expect(await approvals.decideApproval(kit.smithersDb, { runId: "a", nodeId: "g", approved: true, decidedAtMs: 5 })).toBe(true);
    expect(await query(dbPath, "SELECT wake_at_ms FROM _smithers_runs WHERE run_id = 'a'")).toEqual([{ wake_at_ms: 5 }]);
    // A gate decided by an older version, which did not make the run due (nor record on SQLite that it backfilled):
    await execute(dbPath, "UPDATE _smithers_approvals SET status = 'approved', decided_at_ms = 7 WHERE run_id = 'b'");
    if (!onPostgres) await execute(dbPath, "PRAGMA user_version = 0");
    const reopened = openSmithersDb(dbPath, { shared: false }); // as a new process would
    await reopened.close();
    expect(await query(dbPath, "SELECT run_id, wake_at_ms FROM _smithers_runs ORDER BY run_id")).toEqual([
      { run_id: "a", wake_at_ms: 5 },
      { run_id: "b", wake_at_ms: 7 },
    ]);
    const outcomes = await supervise({ db: kit.smithersDb, resolveWorkflow: () => wf });
    expect(outcomes.map((o) => [o.runId, o.action === "resumed" ? o.result.status : o.action]).sort()).toEqual([
      ["a", "finished"],
      ["b", "finished"],
    ]);
  });

  test("an Approval whose output schema cannot take its mode's row fails at render, before anyone is asked", async () => {
    const dbPath = tempDbPath();
    const kit = createSmithers({ approval: approvalDecisionSchema, pick: approvalSelectionSchema }, { dbPath });
    const options = [{ key: "a", label: "A" }];
    for (const gate of [
      <kit.Approval id="g" mode="select" options={options} output={kit.outputs.approval} request={{ title: "pick" }} />,
      <kit.Approval id="g" output={kit.outputs.pick} request={{ title: "ok?" }} />,
    ]) {
      const wf = kit.smithers(() => <kit.Workflow name="mismatch">{gate}</kit.Workflow>);
      const result = await runWorkflow(wf, { input: {} });
      expect(result.error?.code).toBe("INVALID_WORKFLOW");
    }
    expect(await query(dbPath, "SELECT count(*) AS n FROM _smithers_approvals")).toEqual([{ n: 0 }]);
  });

  test("resuming a run that failed on a denial does not announce the gate again", async () => {
    const dbPath = tempDbPath();
    const kit = createSmithers({ approval: approvalDecisionSchema }, { dbPath });
    const wf = kit.smithers(() => (
      <kit.Workflow name="denied">
        <kit.Approval id="g" output={kit.outputs.approval} request={{ title: "ok?" }} />
      </kit.Workflow>
    ));
    await runWorkflow(wf, { input: {}, runId: "r" });
    await deny(kit.smithersDb, { runId: "r" });
    expect((await runWorkflow(wf, { runId: "r", resume: true })).error?.code).toBe("APPROVAL_DENIED");
    expect((await runWorkflow(wf, { runId: "r", resume: true })).error?.code).toBe("APPROVAL_DENIED");
    expect(await query(dbPath, "SELECT count(*) AS n FROM _smithers_events WHERE type = 'ApprovalRequested'")).toEqual([{ n: 1 }]);
  });

  test("a waiting child run is named in the progress line, so its own waits can be addressed", () => {
    const line = formatEvent({
      type: "SubflowWaiting",
      runId: "p",
      timestampMs: 0,
      nodeId: "sub",
      iteration: 0,
      attempt: 1,
      childRunId: "p/sub#0",
      childStatus: "waiting-event",
    });
    expect(line).toBe("subflow sub iter=0: child run p/sub#0 is waiting-event");
  });
});

describe("needs on an Approval", () => {
  test("orders it after the named node", async () => {
    const dbPath = tempDbPath();
    const kit = createSmithers({ approval: approvalDecisionSchema, out: z.object({ n: z.number() }) }, { dbPath });
    const wf = kit.smithers(() => (
      <kit.Workflow name="needs">
        <kit.Parallel>
          <kit.Approval id="g" output={kit.outputs.approval} request={{ title: "ok?" }} needs={{ built: "build" }} />
          <kit.Task id="build" output={kit.outputs.out}>
            {async () => {
              await Bun.sleep(10);
              return { n: 1 };
            }}
          </kit.Task>
        </kit.Parallel>
      </kit.Workflow>
    ));
    await runWorkflow(wf, { input: {}, runId: "r" });
    const [gate] = await query<{ requested_at_ms: number }>(dbPath, "SELECT requested_at_ms FROM _smithers_approvals");
    const [built] = await query<{ updated_at_ms: number }>(dbPath, "SELECT updated_at_ms FROM _smithers_nodes WHERE node_id = 'build'");
    expect(gate!.requested_at_ms).toBeGreaterThanOrEqual(built!.updated_at_ms);
  });
});

describe("a child's gate while its parent is still running", () => {
  test("is decided through the parent's id, and the running parent picks the child up within a poll", async () => {
    const dbPath = tempDbPath();
    const child = createSmithers({ approval: approvalDecisionSchema });
    const childWf = child.smithers(() => (
      <child.Workflow name="child">
        <child.Approval id="review" output={child.outputs.approval} request={{ title: "child review" }} />
      </child.Workflow>
    ));
    const kit = createSmithers({ approval: approvalDecisionSchema, out: z.object({ n: z.number() }) }, { dbPath });
    let slowEnded = 0;
    const wf = kit.smithers(() => (
      <kit.Workflow name="parent">
        <kit.Parallel>
          <Subflow id="sub" workflow={childWf} output={kit.outputs.approval} />
          <kit.Task id="slow" output={kit.outputs.out}>
            {async () => {
              await Bun.sleep(2_500);
              slowEnded = Date.now();
              return { n: 1 };
            }}
          </kit.Task>
        </kit.Parallel>
      </kit.Workflow>
    ));
    const run = runWorkflow(wf, { input: {}, runId: "p" });
    await tablesReady(kit.smithersDb); // on PostgreSQL the tables may still be in the making
    const deadline = Date.now() + 2_000;
    while ((await query(dbPath, "SELECT status FROM _smithers_runs WHERE run_id = 'p/sub#0'"))[0]?.status !== "waiting-approval" && Date.now() < deadline)
      await Bun.sleep(20);
    expect(await approve(kit.smithersDb, { runId: "p" })).toMatchObject({ runId: "p/sub#0", nodeId: "review" });
    expect((await run).status).toBe("finished");
    const [sub] = await query<{ updated_at_ms: number }>(dbPath, "SELECT updated_at_ms FROM _smithers_nodes WHERE run_id = 'p' AND node_id = 'sub'");
    expect(sub!.updated_at_ms).toBeLessThan(slowEnded);
  });
});
