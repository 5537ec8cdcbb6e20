/** @jsxImportSource smithers-workflows */
/** What a failure scope (`<TryCatchFinally>`, `<Saga>`) leaves behind: dependents of its failed task, and waits inside it. */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import {
  approvalDecisionSchema,
  approve,
  createSmithers,
  deny,
  humanInbox,
  pendingApprovals,
  runWorkflow,
  sendSignal,
  Subflow,
  TryCatchFinally,
} from "../../src/index.ts";
import { query, rejection, tempDbPath } from "../helpers.ts";

/** A kit whose tasks record the order their bodies ran in; a task listed in `failing` throws. */
function kit() {
  const dbPath = tempDbPath();
  const calls: string[] = [];
  const failing = new Set<string>();
  const smithers = createSmithers(
    { step: z.object({ note: z.string() }), approval: approvalDecisionSchema, go: z.object({ ok: z.boolean() }), answer: z.object({ text: z.string() }) },
    { dbPath },
  );
  const { Task, outputs } = smithers;
  const step = (id: string, props: { dependsOn?: string[]; delayMs?: number } = {}) => (
    <Task id={id} output={outputs.step} retries={0} dependsOn={props.dependsOn}>
      {async () => {
        if (props.delayMs) await Bun.sleep(props.delayMs);
        calls.push(id);
        if (failing.has(id)) throw new Error(`${id} broke`);
        return { note: id };
      }}
    </Task>
  );
  // Named, not spread: spreading would read createSmithers().db, which is SQLite-only.
  const { Workflow, Sequence, Parallel, Approval, WaitForEvent, Timer, HumanTask, smithersDb } = smithers;
  return {
    dbPath,
    calls,
    failing,
    step,
    Workflow,
    Sequence,
    Parallel,
    Task,
    Approval,
    WaitForEvent,
    Timer,
    HumanTask,
    smithersDb,
    outputs,
    smithers: smithers.smithers,
  };
}

const nodeStates = async (dbPath: string, runId = "r") =>
  Object.fromEntries(
    (await query<{ node_id: string; state: string }>(dbPath, "SELECT node_id, state FROM _smithers_nodes WHERE run_id = ? ORDER BY node_id", runId)).map(
      (n) => [n.node_id, n.state],
    ),
  );

describe("dependsOn on a task whose failure a <TryCatchFinally> caught", () => {
  test("a task after the boundary that depends on the caught task runs, and the run finishes", async () => {
    const { dbPath, calls, failing, step, Workflow, Sequence, smithers } = kit();
    failing.add("deploy");
    const wf = smithers(() => (
      <Workflow name="caught-dependency">
        <Sequence>
          <TryCatchFinally try={step("deploy")} catch={step("recover")} />
          {step("notify", { dependsOn: ["deploy"] })}
        </Sequence>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {}, runId: "r" });
    expect(result.status).toBe("finished");
    expect(calls).toEqual(["deploy", "recover", "notify"]);
    expect(await nodeStates(dbPath)).toEqual({ deploy: "failed", recover: "finished", notify: "finished" });
  });

  test("a parallel branch that depends on the caught task runs once it failed, beside the catch", async () => {
    const { dbPath, calls, failing, step, Workflow, Parallel, smithers } = kit();
    failing.add("deploy");
    const wf = smithers(() => (
      <Workflow name="caught-dependency-parallel">
        <Parallel>
          <TryCatchFinally try={step("deploy")} catch={step("recover", { delayMs: 20 })} />
          {step("notify", { dependsOn: ["deploy"] })}
        </Parallel>
      </Workflow>
    ));
    expect((await runWorkflow(wf, { input: {}, runId: "r" })).status).toBe("finished");
    expect(calls[0]).toBe("deploy");
    expect(new Set(calls)).toEqual(new Set(["deploy", "recover", "notify"]));
    expect(await nodeStates(dbPath)).toEqual({ deploy: "failed", recover: "finished", notify: "finished" });
  });

  test("a dependent of a failure the boundary does not catch never starts, not even while finally runs; the run fails with that failure", async () => {
    const { dbPath, calls, failing, step, Workflow, Parallel, smithers } = kit();
    failing.add("deploy");
    const wf = smithers(() => (
      <Workflow name="uncaught-dependency">
        <Parallel>
          <TryCatchFinally try={step("deploy")} catch={step("recover")} catchErrors={["TASK_TIMEOUT"]} finally={step("cleanup", { delayMs: 50 })} />
          {step("notify", { dependsOn: ["deploy"] })}
        </Parallel>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {}, runId: "r" });
    expect(result.status).toBe("failed");
    expect(result.error).toMatchObject({ code: "TASK_FAILED", nodeId: "deploy" });
    expect(calls).toEqual(["deploy", "cleanup"]);
    expect(await nodeStates(dbPath)).toEqual({ deploy: "failed", cleanup: "finished" });
  });

  test("a task that reads the caught task's row through deps fails the run with DEPENDENCY_DEADLOCK naming it", async () => {
    const { dbPath, calls, failing, step, Workflow, Sequence, Task, smithers, outputs } = kit();
    failing.add("deploy");
    const wf = smithers(() => (
      <Workflow name="caught-deps">
        <Sequence>
          <TryCatchFinally try={step("deploy")} catch={step("recover")} />
          <Task id="report" output={outputs.step} deps={{ deploy: outputs.step }}>
            {(deps) => ({ note: `after ${deps.deploy.note}` })}
          </Task>
        </Sequence>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {}, runId: "r" });
    expect(result.status).toBe("failed");
    expect(result.error).toMatchObject({ code: "DEPENDENCY_DEADLOCK" });
    expect(result.error?.message).toContain("deploy");
    expect(calls).toEqual(["deploy", "recover"]);
    expect(await query(dbPath, "SELECT node_id FROM step ORDER BY node_id")).toEqual([{ node_id: "recover" }]);
  });
});

describe("a wait inside a failed try", () => {
  test("an approval waiting beside the failed task is withdrawn: the catch runs, the run finishes, and the gate leaves the inbox", async () => {
    const { dbPath, calls, failing, step, Workflow, Parallel, Sequence, Approval, smithers, outputs, smithersDb } = kit();
    failing.add("deploy");
    const wf = smithers(() => (
      <Workflow name="gate-in-failed-try">
        <Sequence>
          <TryCatchFinally
            try={
              <Parallel>
                <Approval id="gate" output={outputs.approval} request={{ title: "Ship it?" }} />
                {step("deploy", { delayMs: 20 })}
              </Parallel>
            }
            catch={step("recover")}
            finally={step("cleanup")}
          />
          {step("after")}
        </Sequence>
      </Workflow>
    ));
    const events: string[] = [];
    const result = await runWorkflow(wf, { input: {}, runId: "r", onEvent: (e) => events.push(e.type === "NodeCancelled" ? `${e.type}:${e.nodeId}` : e.type) });
    expect(result.status).toBe("finished");
    expect(calls).toEqual(["deploy", "recover", "cleanup", "after"]);
    expect(await nodeStates(dbPath)).toEqual({ gate: "cancelled", deploy: "failed", recover: "finished", cleanup: "finished", after: "finished" });
    expect(events).toContain("NodeCancelled:gate");
    expect(await query(dbPath, "SELECT node_id, status FROM _smithers_approvals")).toEqual([{ node_id: "gate", status: "withdrawn" }]);
    expect(await pendingApprovals(smithersDb, "r")).toEqual([]);
    expect((await rejection(approve(smithersDb, { runId: "r", nodeId: "gate" }))).code).toBe("APPROVAL_DECIDED");
  });

  test("a run suspended on an async approval resumes into the catch when a sibling fails, and does not wait for the gate again", async () => {
    const { dbPath, calls, Workflow, Parallel, Approval, Task, smithers, outputs, smithersDb } = kit();
    const wf = smithers(() => (
      <Workflow name="denied-beside-gate">
        <TryCatchFinally
          try={
            <Parallel>
              <Approval id="gate" output={outputs.approval} request={{ title: "Ship it?" }} async />
              <Approval id="legal" output={outputs.approval} request={{ title: "Legal ok?" }} async />
            </Parallel>
          }
          catch={
            <Task id="recover" output={outputs.step}>
              {() => {
                calls.push("recover");
                return { note: "recovered" };
              }}
            </Task>
          }
        />
      </Workflow>
    ));
    expect((await runWorkflow(wf, { input: {}, runId: "r" })).status).toBe("waiting-approval");
    await deny(smithersDb, { runId: "r", nodeId: "legal" });
    const resumed = await runWorkflow(wf, { runId: "r", resume: true });
    expect(resumed.status).toBe("finished");
    expect(calls).toEqual(["recover"]);
    expect(await nodeStates(dbPath)).toEqual({ gate: "cancelled", legal: "failed", recover: "finished" });
    expect(await query(dbPath, "SELECT node_id, status FROM _smithers_approvals ORDER BY node_id")).toEqual([
      { node_id: "gate", status: "withdrawn" },
      { node_id: "legal", status: "denied" },
    ]);
  });

  test("a signal wait, a timer and a human task inside the failed try are settled; the human request is closed", async () => {
    const { dbPath, calls, failing, step, Workflow, Parallel, WaitForEvent, Timer, HumanTask, smithers, outputs, smithersDb } = kit();
    failing.add("deploy");
    const wf = smithers(() => (
      <Workflow name="waits-in-failed-try">
        <TryCatchFinally
          try={
            <Parallel>
              <WaitForEvent id="go" event="go" output={outputs.go} async />
              <Timer id="pause" duration="1h" />
              <HumanTask id="ask" output={outputs.answer} prompt="Anything to add?" async />
              {step("deploy", { delayMs: 20 })}
            </Parallel>
          }
          catch={step("recover")}
        />
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {}, runId: "r" });
    expect(result.status).toBe("finished");
    expect(calls).toEqual(["deploy", "recover"]);
    expect(await nodeStates(dbPath)).toEqual({ go: "cancelled", pause: "cancelled", ask: "cancelled", deploy: "failed", recover: "finished" });
    expect(await query(dbPath, "SELECT status FROM _smithers_human_requests")).toEqual([{ status: "withdrawn" }]);
    expect(await humanInbox(smithersDb)).toEqual([]);
    expect((await rejection(sendSignal(smithersDb, { runId: "r", name: "go", data: { ok: true } }))).code).toBe("RUN_ENDED");
  });

  test("a task outside that depends on the cancelled gate fails the run with DEPENDENCY_DEADLOCK instead of waiting", async () => {
    const { dbPath, calls, failing, step, Workflow, Parallel, Sequence, Approval, smithers, outputs } = kit();
    failing.add("deploy");
    const wf = smithers(() => (
      <Workflow name="depends-on-cancelled-gate">
        <Sequence>
          <TryCatchFinally
            try={
              <Parallel>
                <Approval id="gate" output={outputs.approval} request={{ title: "Ship it?" }} async />
                {step("deploy", { delayMs: 20 })}
              </Parallel>
            }
            catch={step("recover")}
          />
          {step("announce", { dependsOn: ["gate"] })}
        </Sequence>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {}, runId: "r" });
    expect(result.status).toBe("failed");
    expect(result.error).toMatchObject({ code: "DEPENDENCY_DEADLOCK" });
    expect(calls).toEqual(["deploy", "recover"]);
    expect(await nodeStates(dbPath)).toEqual({ gate: "cancelled", deploy: "failed", recover: "finished" });
  });

  test("resuming the failed run runs the block again and asks the withdrawn gate again", async () => {
    const { dbPath, calls, failing, step, Workflow, Parallel, Approval, smithers, outputs, smithersDb } = kit();
    failing.add("deploy");
    failing.add("recover");
    const wf = smithers(() => (
      <Workflow name="gate-asked-again">
        <TryCatchFinally
          try={
            <Parallel>
              <Approval id="gate" output={outputs.approval} request={{ title: "Ship it?" }} async />
              {step("deploy", { delayMs: 20 })}
            </Parallel>
          }
          catch={step("recover")}
        />
      </Workflow>
    ));
    const first = await runWorkflow(wf, { input: {}, runId: "r" });
    expect(first.status).toBe("failed");
    expect(await query(dbPath, "SELECT status FROM _smithers_approvals")).toEqual([{ status: "withdrawn" }]);
    failing.clear();
    calls.length = 0;
    expect((await runWorkflow(wf, { runId: "r", resume: true })).status).toBe("waiting-approval");
    expect(calls).toEqual(["deploy"]);
    expect((await pendingApprovals(smithersDb, "r")).map((p) => [p.nodeId, p.request.title])).toEqual([["gate", "Ship it?"]]);
    await approve(smithersDb, { runId: "r", nodeId: "gate" });
    expect((await runWorkflow(wf, { runId: "r", resume: true })).status).toBe("finished");
    expect(await query(dbPath, "SELECT approved FROM approval")).toEqual([{ approved: 1 }]);
  });

  test("a <Subflow> whose child waits inside the failed try is settled: its child run is cancelled and the child's requests leave the inboxes", async () => {
    const { dbPath, calls, failing, step, Workflow, Parallel, smithers, smithersDb } = kit();
    const child = createSmithers({ approval: approvalDecisionSchema, answer: z.object({ text: z.string() }) });
    const childWf = child.smithers(
      () => (
        <child.Workflow name="waiting-child">
          <child.Parallel>
            <child.Approval id="review" output={child.outputs.approval} request={{ title: "Review?" }} async />
            <child.HumanTask id="ask" output={child.outputs.answer} prompt="Notes?" async />
          </child.Parallel>
        </child.Workflow>
      ),
      { output: child.outputs.approval },
    );
    failing.add("deploy");
    const wf = smithers(() => (
      <Workflow name="subflow-in-failed-try">
        <TryCatchFinally
          try={
            <Parallel>
              <Subflow id="sub" workflow={childWf} input={{}} output={child.outputs.approval} />
              {step("deploy", { delayMs: 50 })}
            </Parallel>
          }
          catch={step("recover")}
        />
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {}, runId: "r" });
    expect(result.status).toBe("finished");
    expect(calls).toEqual(["deploy", "recover"]);
    expect((await nodeStates(dbPath)).sub).toBe("cancelled");
    expect(await query(dbPath, "SELECT run_id, status FROM _smithers_runs ORDER BY run_id")).toEqual([
      { run_id: "r", status: "finished" },
      { run_id: "r/sub#0", status: "cancelled" },
    ]);
    expect(await query(dbPath, "SELECT run_id, status FROM _smithers_approvals")).toEqual([{ run_id: "r/sub#0", status: "withdrawn" }]);
    expect(await humanInbox(smithersDb)).toEqual([]);
  });
});
