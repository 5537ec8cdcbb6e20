/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { approvalDecisionSchema, approve, createSmithers, runWorkflow, sendSignal, Subflow, type SmithersEvent } from "../../src/index.ts";
import { pendingApprovals, supervise } from "../../src/engine/index.ts";
import { query, tempDbPath } from "../helpers.ts";

type Wait = "approval" | "timer" | "signal";

/** A parent whose `<Subflow id="sub">` runs a child that waits (as `wait` says) before its last task; a sibling branch runs beside it. */
function parentOf(dbPath: string, wait: Wait, calls: string[], untilMs = 0) {
  const child = createSmithers({
    input: z.object({ who: z.string() }),
    approval: approvalDecisionSchema,
    go: z.object({ ok: z.boolean() }),
    result: z.object({ text: z.string() }),
  });
  const childWf = child.smithers(
    (ctx) => (
      <child.Workflow name="waiting-child">
        {wait === "approval" ? (
          <child.Approval id="review" output={child.outputs.approval} request={{ title: `Ship ${ctx.input.who}?` }} />
        ) : wait === "timer" ? (
          <child.Timer id="pause" until={new Date(untilMs)} />
        ) : (
          <child.WaitForEvent id="go" event="go" output={child.outputs.go} />
        )}
        <child.Task id="finish" output={child.outputs.result}>
          {() => {
            calls.push("child-finish");
            return { text: `done for ${ctx.input.who}` };
          }}
        </child.Task>
      </child.Workflow>
    ),
    { output: child.outputs.result },
  );
  const kit = createSmithers({ sub: z.object({ text: z.string() }), side: z.object({ n: z.number() }), report: z.object({ line: z.string() }) }, { dbPath });
  const { Workflow, Task, Parallel, Sequence, smithers, outputs } = kit;
  const wf = smithers((ctx) => (
    <Workflow name="parent">
      <Parallel>
        <Sequence>
          <Subflow id="sub" workflow={childWf} input={{ who: "ada" }} output={outputs.sub} />
          <Task id="report" output={outputs.report}>
            {() => {
              calls.push("report");
              return { line: ctx.output<{ text: string }>(outputs.sub, { nodeId: "sub" }).text };
            }}
          </Task>
        </Sequence>
        <Sequence>
          <Task id="side-1" output={outputs.side}>
            {async () => {
              await Bun.sleep(10);
              return { n: 1 };
            }}
          </Task>
          <Task id="side-2" output={outputs.side}>
            {() => {
              calls.push("side-2");
              return { n: 2 };
            }}
          </Task>
        </Sequence>
      </Parallel>
    </Workflow>
  ));
  return { wf, kit };
}

const childId = "p/sub#0";

describe("<Subflow> whose child waits", () => {
  test("a child waiting for an approval makes the parent wait too; the gate is decided through the parent's id and the daemon resumes the parent, which resumes the child", async () => {
    const dbPath = tempDbPath();
    const calls: string[] = [];
    const { wf, kit } = parentOf(dbPath, "approval", calls);
    const events: SmithersEvent[] = [];
    expect(await runWorkflow(wf, { input: {}, runId: "p", onEvent: (e) => events.push(e) })).toEqual({ runId: "p", status: "waiting-approval" });
    // The sibling branch went on: a waiting child holds up only what depends on it.
    expect(calls).toEqual(["side-2"]);
    expect(await query(dbPath, "SELECT run_id, parent_run_id, status FROM _smithers_runs ORDER BY run_id")).toEqual([
      { run_id: "p", parent_run_id: null, status: "waiting-approval" },
      { run_id: childId, parent_run_id: "p", status: "waiting-approval" },
    ]);
    expect(await query(dbPath, "SELECT state FROM _smithers_nodes WHERE run_id = 'p' AND node_id = 'sub'")).toEqual([{ state: "waiting-approval" }]);
    expect(await query(dbPath, "SELECT attempt, state FROM _smithers_attempts WHERE run_id = 'p' AND node_id = 'sub'")).toEqual([
      { attempt: 1, state: "waiting" },
    ]);
    expect(events.filter((e) => e.type === "SubflowWaiting")).toMatchObject([{ nodeId: "sub", childRunId: childId, childStatus: "waiting-approval" }]);

    const pending = await pendingApprovals(kit.smithersDb, "p");
    expect(pending.map((p) => [p.runId, p.nodeId, p.request.title])).toEqual([[childId, "review", "Ship ada?"]]);
    // Not due yet: the daemon leaves both alone.
    expect(await supervise({ db: kit.smithersDb, resolveWorkflow: () => wf })).toEqual([]);

    const decision = await approve(kit.smithersDb, { runId: "p", by: "ada", now: () => 1_000 });
    expect(decision).toEqual({ runId: childId, nodeId: "review", iteration: 0, approved: true });
    // The decision makes the child due, and its parent with it: the daemon finds the parent by its wake time.
    expect(await query(dbPath, "SELECT run_id, wake_at_ms FROM _smithers_runs ORDER BY run_id")).toEqual([
      { run_id: "p", wake_at_ms: 1_000 },
      { run_id: childId, wake_at_ms: 1_000 },
    ]);
    const outcomes = await supervise({ db: kit.smithersDb, resolveWorkflow: () => wf });
    expect(outcomes.map((o) => [o.runId, o.action, o.action === "resumed" ? o.result.status : undefined])).toEqual([["p", "resumed", "finished"]]);
    expect(calls).toEqual(["side-2", "child-finish", "report"]);
    expect(await query(dbPath, "SELECT run_id, status FROM _smithers_runs ORDER BY run_id")).toEqual([
      { run_id: "p", status: "finished" },
      { run_id: childId, status: "finished" },
    ]);
    expect(await query(dbPath, "SELECT line FROM report")).toEqual([{ line: "done for ada" }]);
    expect(await query(dbPath, "SELECT attempt, state FROM _smithers_attempts WHERE run_id = 'p' AND node_id = 'sub' ORDER BY attempt")).toEqual([
      { attempt: 1, state: "waiting" },
      { attempt: 2, state: "finished" },
    ]);
  });

  test("a child waiting for a timer makes the parent wait-timer with the child's fire time; once due the daemon resumes it", async () => {
    const dbPath = tempDbPath();
    const calls: string[] = [];
    const fireAt = Date.now() + 1_500;
    const { wf, kit } = parentOf(dbPath, "timer", calls, fireAt);
    expect(await runWorkflow(wf, { input: {}, runId: "p", waitInPlaceMs: 0 })).toEqual({ runId: "p", status: "waiting-timer" });
    expect(await query(dbPath, "SELECT run_id, status, wake_at_ms FROM _smithers_runs ORDER BY run_id")).toEqual([
      { run_id: "p", status: "waiting-timer", wake_at_ms: fireAt },
      { run_id: childId, status: "waiting-timer", wake_at_ms: fireAt },
    ]);
    expect(await query(dbPath, "SELECT state, wake_at_ms FROM _smithers_nodes WHERE run_id = 'p' AND node_id = 'sub'")).toEqual([
      { state: "waiting-timer", wake_at_ms: fireAt },
    ]);
    expect(await supervise({ db: kit.smithersDb, resolveWorkflow: () => wf, now: () => fireAt - 1 })).toEqual([]);
    await Bun.sleep(Math.max(0, fireAt - Date.now()) + 10);
    const outcomes = await supervise({ db: kit.smithersDb, resolveWorkflow: () => wf });
    expect(outcomes.map((o) => [o.runId, o.action === "resumed" ? o.result.status : o.action])).toEqual([["p", "finished"]]);
    expect(calls).toEqual(["side-2", "child-finish", "report"]);
  });

  test("a child waiting for a signal: the signal sent to the child run wakes the parent; --resume before it arrives waits again", async () => {
    const dbPath = tempDbPath();
    const calls: string[] = [];
    const { wf, kit } = parentOf(dbPath, "signal", calls);
    expect((await runWorkflow(wf, { input: {}, runId: "p" })).status).toBe("waiting-event");
    expect((await runWorkflow(wf, { runId: "p", resume: true })).status).toBe("waiting-event");
    expect(calls).toEqual(["side-2"]);
    await sendSignal(kit.smithersDb, { runId: childId, name: "go", data: { ok: true } });
    expect((await query<{ wake_at_ms: number | null }>(dbPath, "SELECT wake_at_ms FROM _smithers_runs WHERE run_id = 'p'"))[0]?.wake_at_ms).toBeNumber();
    const outcomes = await supervise({ db: kit.smithersDb, resolveWorkflow: () => wf });
    expect(outcomes.map((o) => [o.runId, o.action === "resumed" ? o.result.status : o.action])).toEqual([["p", "finished"]]);
    expect(calls).toEqual(["side-2", "child-finish", "report"]);
    expect(await query(dbPath, "SELECT ok FROM go")).toEqual([{ ok: 1 }]);
  });
});
