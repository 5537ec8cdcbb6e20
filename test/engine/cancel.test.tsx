/** requestCancel: a running run stops at its next heartbeat; a waiting run is cancelled at once; ended runs refuse. */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { approvalDecisionSchema, approve, createSmithers, humanInbox, pendingApprovals, runWorkflow } from "../../src/index.ts";
import { requestCancel } from "../../src/engine/index.ts";
import { rejection, sleepUnlessAborted, query, tempDbPath } from "../helpers.ts";

describe("requestCancel", () => {
  test("a running run is asked; its owner cancels at the next heartbeat, the attempt ends cancelled", async () => {
    const dbPath = tempDbPath();
    const { smithers, Workflow, Task, outputs, smithersDb } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="long">
        <Task id="slow" output={outputs.out}>
          {async (ctx) => {
            await sleepUnlessAborted(60_000, ctx.signal);
            return { n: 1 };
          }}
        </Task>
      </Workflow>
    ));
    const running = runWorkflow(wf, {
      runId: "r",
      onEvent: (e) => {
        if (e.type === "NodeStarted") void requestCancel(smithersDb, "r");
      },
    });
    const started = Date.now();
    const result = await running;
    expect(result.status).toBe("cancelled");
    expect(Date.now() - started).toBeLessThan(7_000); // within one heartbeat (5 s)
    expect(await query(dbPath, "SELECT state FROM _smithers_attempts")).toEqual([{ state: "cancelled" }]);
    expect((await rejection(requestCancel(smithersDb, "r"))).code).toBe("RUN_ENDED");
    expect((await rejection(requestCancel(smithersDb, "nope"))).code).toBe("RUN_NOT_FOUND");
    // Resuming a cancelled run starts it again: the old request does not stop it.
    const controller = new AbortController();
    const again = runWorkflow(wf, {
      runId: "r",
      resume: true,
      signal: controller.signal,
      onEvent: (e) => e.type === "NodeStarted" && setTimeout(() => controller.abort(), 50),
    });
    expect((await again).status).toBe("cancelled");
    expect(await query(dbPath, "SELECT count(*) AS n FROM _smithers_attempts")).toEqual([{ n: 2 }]);
  }, 15_000);

  test("a waiting run is cancelled at once, with its waiting node and a RunCancelled event", async () => {
    const dbPath = tempDbPath();
    const { smithers, Workflow, Approval, outputs, smithersDb } = createSmithers({ approval: approvalDecisionSchema }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="gate">
        <Approval id="ok" output={outputs.approval} request={{ title: "ok?" }} />
      </Workflow>
    ));
    expect((await runWorkflow(wf, { runId: "w" })).status).toBe("waiting-approval");
    expect(await requestCancel(smithersDb, "w")).toEqual({ runId: "w", status: "cancelled" });
    expect(await query(dbPath, "SELECT status FROM _smithers_runs")).toEqual([{ status: "cancelled" }]);
    expect(await query(dbPath, "SELECT state FROM _smithers_nodes")).toEqual([{ state: "cancelled" }]);
    expect(await query<{ type: string }>(dbPath, "SELECT type FROM _smithers_events ORDER BY seq DESC LIMIT 1")).toEqual([{ type: "RunCancelled" }]);
  });

  test("a waiting run cancelled withdraws its open gate and human request from the inboxes; resumed, it asks both again", async () => {
    const dbPath = tempDbPath();
    const { smithers, Workflow, Parallel, Approval, HumanTask, outputs, smithersDb } = createSmithers(
      { approval: approvalDecisionSchema, answer: z.object({ text: z.string() }) },
      { dbPath },
    );
    const wf = smithers(() => (
      <Workflow name="asks">
        <Parallel>
          <Approval id="ok" output={outputs.approval} request={{ title: "ok?" }} async />
          <HumanTask id="ask" output={outputs.answer} prompt="Anything?" async />
        </Parallel>
      </Workflow>
    ));
    expect((await runWorkflow(wf, { runId: "w" })).status).toBe("waiting-approval");
    expect(await requestCancel(smithersDb, "w")).toEqual({ runId: "w", status: "cancelled" });
    expect(await query(dbPath, "SELECT status FROM _smithers_approvals")).toEqual([{ status: "withdrawn" }]);
    expect(await query(dbPath, "SELECT status FROM _smithers_human_requests")).toEqual([{ status: "withdrawn" }]);
    expect(await humanInbox(smithersDb)).toEqual([]);
    expect((await rejection(approve(smithersDb, { runId: "w", nodeId: "ok" }))).code).toBe("APPROVAL_DECIDED");

    expect((await runWorkflow(wf, { runId: "w", resume: true })).status).toBe("waiting-approval");
    expect(await query(dbPath, "SELECT status FROM _smithers_approvals")).toEqual([{ status: "requested" }]);
    expect((await humanInbox(smithersDb)).map((i) => [i.requestId, i.prompt])).toEqual([["w:ask:0:1", "Anything?"]]);
    expect((await pendingApprovals(smithersDb, "w")).map((p) => p.nodeId)).toEqual(["ok"]);
  });

  test("a run asked to stop before its next heartbeat that then stops to wait ends cancelled, not waiting", async () => {
    const dbPath = tempDbPath();
    const { smithers, Workflow, Task, Approval, outputs, smithersDb } = createSmithers(
      { out: z.object({ n: z.number() }), approval: approvalDecisionSchema },
      { dbPath },
    );
    const wf = smithers(() => (
      <Workflow name="then-wait">
        <Task id="work" output={outputs.out}>
          {async () => {
            await requestCancel(smithersDb, "s"); // from "another process", well before a heartbeat
            return { n: 1 };
          }}
        </Task>
        <Approval id="ok" output={outputs.approval} request={{ title: "ok?" }} dependsOn={["work"]} />
      </Workflow>
    ));
    expect((await runWorkflow(wf, { runId: "s" })).status).toBe("cancelled");
    expect(await query(dbPath, "SELECT status FROM _smithers_runs")).toEqual([{ status: "cancelled" }]);
    expect(await query(dbPath, "SELECT node_id, state FROM _smithers_nodes ORDER BY node_id")).toEqual([
      { node_id: "ok", state: "cancelled" },
      { node_id: "work", state: "finished" },
    ]);
  });
});
