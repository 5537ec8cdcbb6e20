/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { approvalDecisionSchema, approve, createSmithers, deny, runWorkflow, type SmithersEvent } from "../../src/index.ts";
import { pendingApprovals, supervise } from "../../src/engine/index.ts";
import { execute, query, rejection, tempDbPath } from "../helpers.ts";

function gated(dbPath: string, onDeny?: "fail" | "continue" | "skip") {
  const calls: string[] = [];
  const kit = createSmithers({ build: z.object({ n: z.number() }), approval: approvalDecisionSchema, deploy: z.object({ approved: z.boolean() }) }, { dbPath });
  const { Workflow, Task, Approval, smithers, outputs } = kit;
  const wf = smithers((ctx) => (
    <Workflow name="gated">
      <Task id="build" output={outputs.build}>
        {() => {
          calls.push("build");
          return { n: 1 };
        }}
      </Task>
      <Approval id="ship-it" output={outputs.approval} onDeny={onDeny} request={{ title: "Ship it?", summary: "all green", metadata: { v: 3 } }} />
      <Task id="deploy" output={outputs.deploy}>
        {() => {
          calls.push("deploy");
          return { approved: Boolean(ctx.outputMaybe(outputs.approval, { nodeId: "ship-it" })?.approved) };
        }}
      </Task>
    </Workflow>
  ));
  return { wf, calls, kit };
}

describe("<Approval>", () => {
  test("the run stops waiting-approval with the request stored; approved and resumed, it continues without re-running what finished", async () => {
    const dbPath = tempDbPath();
    const { wf, calls, kit } = gated(dbPath);
    const events: SmithersEvent[] = [];
    const first = await runWorkflow(wf, { input: {}, runId: "r", onEvent: (e) => events.push(e) });
    expect(first).toEqual({ runId: "r", status: "waiting-approval" });
    expect(await query(dbPath, "SELECT status, wake_at_ms FROM _smithers_runs")).toEqual([{ status: "waiting-approval", wake_at_ms: null }]);
    expect(await query(dbPath, "SELECT node_id, state FROM _smithers_nodes ORDER BY node_id")).toEqual([
      { node_id: "build", state: "finished" },
      { node_id: "ship-it", state: "waiting-approval" },
    ]);
    expect(await query(dbPath, "SELECT status, request_json FROM _smithers_approvals")).toEqual([
      { status: "requested", request_json: JSON.stringify({ title: "Ship it?", summary: "all green", metadata: { v: 3 } }) },
    ]);
    expect(events.filter((e) => e.type === "ApprovalRequested" || e.type === "RunWaiting").map((e) => e.type)).toEqual(["ApprovalRequested", "RunWaiting"]);
    expect((await pendingApprovals(kit.smithersDb, "r")).map((p) => [p.nodeId, p.request.title])).toEqual([["ship-it", "Ship it?"]]);

    expect(await approve(kit.smithersDb, { runId: "r", by: "ada", note: "go", now: () => Date.parse("2026-11-23T10:00:00Z") })).toEqual({
      runId: "r",
      nodeId: "ship-it",
      iteration: 0,
      approved: true,
    });
    // The decision makes the run due in the same transaction: the daemon finds it by wake_at_ms alone.
    expect(await query(dbPath, "SELECT wake_at_ms FROM _smithers_runs")).toEqual([{ wake_at_ms: Date.parse("2026-11-23T10:00:00Z") }]);
    const resumed = await runWorkflow(wf, { runId: "r", resume: true });
    expect(resumed).toMatchObject({ status: "finished", output: { approved: true } });
    expect(calls).toEqual(["build", "deploy"]);
    expect(await query(dbPath, "SELECT node_id, approved, note, decided_by, decided_at FROM approval")).toEqual([
      { node_id: "ship-it", approved: 1, note: "go", decided_by: "ada", decided_at: "2026-11-23T10:00:00.000Z" },
    ]);
    expect(await query(dbPath, "SELECT type FROM _smithers_events WHERE type = 'ApprovalDecided'")).toEqual([{ type: "ApprovalDecided" }]);
  });

  test("denied with the default onDeny, the node fails with APPROVAL_DENIED and nothing after it runs", async () => {
    const dbPath = tempDbPath();
    const { wf, calls, kit } = gated(dbPath);
    await runWorkflow(wf, { input: {}, runId: "r" });
    await deny(kit.smithersDb, { runId: "r", nodeId: "ship-it", by: "bo", note: "not today" });
    const resumed = await runWorkflow(wf, { runId: "r", resume: true });
    expect(resumed.status).toBe("failed");
    expect(resumed.error?.code).toBe("APPROVAL_DENIED");
    expect(resumed.error?.message).toContain("not today");
    expect(calls).toEqual(["build"]);
    expect(await query(dbPath, "SELECT count(*) AS n FROM approval")).toEqual([{ n: 0 }]);
  });

  test("denied with onDeny continue, the decision row is written and downstream reads it", async () => {
    const dbPath = tempDbPath();
    const { wf, calls, kit } = gated(dbPath, "continue");
    await runWorkflow(wf, { input: {}, runId: "r" });
    await deny(kit.smithersDb, { runId: "r" });
    expect(await runWorkflow(wf, { runId: "r", resume: true })).toMatchObject({ status: "finished", output: { approved: false } });
    expect(calls).toEqual(["build", "deploy"]);
    expect(await query(dbPath, "SELECT approved FROM approval")).toEqual([{ approved: 0 }]);
  });

  test("denied with onDeny skip, the node is skipped without a row and the run goes on", async () => {
    const dbPath = tempDbPath();
    const { wf, kit } = gated(dbPath, "skip");
    await runWorkflow(wf, { input: {}, runId: "r" });
    await deny(kit.smithersDb, { runId: "r" });
    expect(await runWorkflow(wf, { runId: "r", resume: true })).toMatchObject({ status: "finished", output: { approved: false } });
    expect(await query(dbPath, "SELECT state FROM _smithers_nodes WHERE node_id = 'ship-it'")).toEqual([{ state: "skipped" }]);
    expect(await query(dbPath, "SELECT count(*) AS n FROM approval")).toEqual([{ n: 0 }]);
  });

  test("in a Parallel, the other branch keeps running while the approval waits", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, Approval, Parallel, smithers, outputs } = createSmithers(
      { approval: approvalDecisionSchema, work: z.object({ n: z.number() }) },
      { dbPath },
    );
    const wf = smithers(() => (
      <Workflow name="side-by-side">
        <Parallel>
          <Approval id="gate" output={outputs.approval} request={{ title: "ok?" }} />
          <Task id="work" output={outputs.work}>
            {async () => {
              await Bun.sleep(20);
              return { n: 7 };
            }}
          </Task>
        </Parallel>
      </Workflow>
    ));
    expect((await runWorkflow(wf, { input: {} })).status).toBe("waiting-approval");
    expect(await query(dbPath, "SELECT node_id, state FROM _smithers_nodes ORDER BY node_id")).toEqual([
      { node_id: "gate", state: "waiting-approval" },
      { node_id: "work", state: "finished" },
    ]);
  });

  test("deciding an unknown run or gate, one already decided, or one of several unnamed, is an error with its code and changes nothing", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Approval, Parallel, smithers, outputs, smithersDb } = createSmithers({ approval: approvalDecisionSchema }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="two-gates">
        <Parallel>
          <Approval id="a" output={outputs.approval} request={{ title: "A?" }} />
          <Approval id="b" output={outputs.approval} request={{ title: "B?" }} />
        </Parallel>
      </Workflow>
    ));
    await runWorkflow(wf, { input: {}, runId: "r" });
    expect((await rejection(approve(smithersDb, { runId: "nope" }))).code).toBe("RUN_NOT_FOUND");
    expect((await rejection(approve(smithersDb, { runId: "r" }))).code).toBe("APPROVAL_AMBIGUOUS");
    expect((await rejection(approve(smithersDb, { runId: "r", nodeId: "c" }))).code).toBe("APPROVAL_NOT_FOUND");
    expect(await query(dbPath, "SELECT status FROM _smithers_approvals ORDER BY node_id")).toEqual([{ status: "requested" }, { status: "requested" }]);
    await approve(smithersDb, { runId: "r", nodeId: "a" });
    expect((await rejection(deny(smithersDb, { runId: "r", nodeId: "a" }))).code).toBe("APPROVAL_DECIDED");
    expect(await query(dbPath, "SELECT node_id, status FROM _smithers_approvals ORDER BY node_id")).toEqual([
      { node_id: "a", status: "approved" },
      { node_id: "b", status: "requested" },
    ]);
  });

  test("props this version does not support yet are UNSUPPORTED_PROP, contradictory ones INVALID_WORKFLOW: refused, not ignored", async () => {
    const { Workflow, Approval, smithers, outputs } = createSmithers({ approval: approvalDecisionSchema }, { dbPath: tempDbPath() });
    const option = { key: "a", label: "A" };
    const cases: [object, string][] = [
      [{ autoApprove: {} }, "UNSUPPORTED_PROP"],
      [{ allowedUsers: ["ada"] }, "UNSUPPORTED_PROP"],
      [{ meta: { team: "ops" } }, "UNSUPPORTED_PROP"],
      [{ mode: "vote" }, "INVALID_WORKFLOW"],
      [{ mode: "select" }, "INVALID_WORKFLOW"], // no options
      [{ mode: "rank", options: [] }, "INVALID_WORKFLOW"],
      [{ mode: "select", options: [option, option] }, "INVALID_WORKFLOW"], // a key twice
      [{ mode: "select", options: [{ key: "a" }] }, "INVALID_WORKFLOW"], // no label
      [{ options: [option] }, "INVALID_WORKFLOW"], // options in approve mode
      [{ mode: "select", options: [option], onDeny: "continue" }, "INVALID_WORKFLOW"], // a denial chooses nothing
      [{ async: "yes" }, "INVALID_WORKFLOW"],
    ];
    for (const [extra, code] of cases) {
      const wf = smithers(() => (
        <Workflow name="x">
          <Approval id="g" output={outputs.approval} request={{ title: "t" }} {...(extra as object)} />
        </Workflow>
      ));
      const result = await runWorkflow(wf, { input: {} });
      expect([JSON.stringify(extra), result.status, result.error?.code]).toEqual([JSON.stringify(extra), "failed", code]);
    }
  });

  test("a gate decided while its run waits for a long timer elsewhere is woken by the daemon; child runs are left to their parent", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, Approval, Timer, Parallel, Sequence, smithers, outputs, smithersDb } = createSmithers(
      { approval: approvalDecisionSchema, done: z.object({ n: z.number() }) },
      { dbPath },
    );
    const wf = smithers(() => (
      <Workflow name="both">
        <Parallel>
          <Sequence>
            <Approval id="gate" output={outputs.approval} request={{ title: "go?" }} />
            <Task id="after-gate" output={outputs.done}>
              {{ n: 1 }}
            </Task>
          </Sequence>
          <Sequence>
            <Timer id="hour" duration="1h" />
            <Task id="after-hour" output={outputs.done}>
              {{ n: 2 }}
            </Task>
          </Sequence>
        </Parallel>
      </Workflow>
    ));
    // A person is the more specific wait; the timer's time is still stored for the daemon.
    expect((await runWorkflow(wf, { input: {}, runId: "both" })).status).toBe("waiting-approval");
    expect(await query(dbPath, "SELECT wake_at_ms > 0 AS timed FROM _smithers_runs WHERE run_id = 'both'")).toEqual([{ timed: 1 }]);
    await approve(smithersDb, { runId: "both" });
    // A child run (parent_run_id set) with a decided gate is not the daemon's to wake.
    await execute(
      dbPath,
      "INSERT INTO _smithers_runs (run_id, parent_run_id, workflow_name, status, created_at_ms) VALUES ('both/sub#0', 'both', 'child', 'waiting-approval', 0)",
    );
    await execute(
      dbPath,
      "INSERT INTO _smithers_nodes (run_id, node_id, iteration, state, updated_at_ms, output_table) VALUES ('both/sub#0', 'g', 0, 'waiting-approval', 0, 'approval')",
    );
    await execute(dbPath, "INSERT INTO _smithers_approvals (run_id, node_id, iteration, status) VALUES ('both/sub#0', 'g', 0, 'approved')");
    const outcomes = await supervise({ db: smithersDb, resolveWorkflow: () => wf });
    expect(outcomes.map((o) => [o.runId, o.action, o.action === "resumed" ? o.result.status : undefined])).toEqual([["both", "resumed", "waiting-timer"]]);
    expect(await query(dbPath, "SELECT node_id FROM done")).toEqual([{ node_id: "after-gate" }]);
  });
});
