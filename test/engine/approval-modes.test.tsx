/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import {
  approvalDecisionSchema,
  approvalRankingSchema,
  approvalSelectionSchema,
  approve,
  createSmithers,
  deny,
  runWorkflow,
  type SmithersEvent,
} from "../../src/index.ts";
import { pendingApprovals } from "../../src/engine/index.ts";
import { query, rejection, tablesReady, tempDbPath, waitFor } from "../helpers.ts";

const eventTypes = (events: SmithersEvent[], ...types: string[]) => events.filter((e) => types.includes(e.type)).map((e) => e.type);

describe("<Task needsApproval>", () => {
  function gatedTask(dbPath: string, opts: { fail?: () => boolean } = {}) {
    const calls: string[] = [];
    const kit = createSmithers({ build: z.object({ n: z.number() }), deploy: z.object({ url: z.string() }) }, { dbPath });
    const { Workflow, Task, smithers, outputs } = kit;
    const wf = smithers(() => (
      <Workflow name="gated-task">
        <Task id="build" output={outputs.build}>
          {() => {
            calls.push("build");
            return { n: 1 };
          }}
        </Task>
        <Task id="deploy" output={outputs.deploy} needsApproval label="Deploy to prod" meta={{ env: "prod" }} noRetry>
          {() => {
            calls.push("deploy");
            if (opts.fail?.()) throw new Error("deploy broke");
            return { url: "https://prod.example" };
          }}
        </Task>
      </Workflow>
    ));
    return { wf, calls, kit };
  }

  test("the task does not start until approved: the run ends waiting-approval, and once approved and resumed the task runs once and writes its row", async () => {
    const dbPath = tempDbPath();
    const { wf, calls, kit } = gatedTask(dbPath);
    const events: SmithersEvent[] = [];
    expect(await runWorkflow(wf, { input: {}, runId: "r", onEvent: (e) => events.push(e) })).toEqual({ runId: "r", status: "waiting-approval" });
    expect(calls).toEqual(["build"]);
    expect(await query(dbPath, "SELECT node_id, state FROM _smithers_nodes ORDER BY node_id")).toEqual([
      { node_id: "build", state: "finished" },
      { node_id: "deploy", state: "waiting-approval" },
    ]);
    expect(await query(dbPath, "SELECT count(*) AS n FROM _smithers_attempts WHERE node_id = 'deploy'")).toEqual([{ n: 0 }]);
    const [pending] = await pendingApprovals(kit.smithersDb, "r");
    expect(pending?.request).toEqual({ title: 'Start task "Deploy to prod"?', metadata: { env: "prod" }, mode: "gate" });

    await approve(kit.smithersDb, { runId: "r", by: "ada" });
    const resumed = await runWorkflow(wf, { runId: "r", resume: true, onEvent: (e) => events.push(e) });
    expect(resumed).toMatchObject({ status: "finished", output: { url: "https://prod.example" } });
    expect(calls).toEqual(["build", "deploy"]);
    expect(await query(dbPath, "SELECT node_id, url FROM deploy")).toEqual([{ node_id: "deploy", url: "https://prod.example" }]);
    expect(eventTypes(events, "ApprovalRequested", "ApprovalDecided", "NodeStarted")).toEqual([
      "NodeStarted", // build
      "ApprovalRequested",
      "ApprovalDecided",
      "NodeStarted", // deploy, only after the decision
    ]);
  });

  test("denied, the task fails with APPROVAL_DENIED and its body never runs", async () => {
    const dbPath = tempDbPath();
    const { wf, calls, kit } = gatedTask(dbPath);
    await runWorkflow(wf, { input: {}, runId: "r" });
    await deny(kit.smithersDb, { runId: "r", nodeId: "deploy", note: "freeze" });
    const resumed = await runWorkflow(wf, { runId: "r", resume: true });
    expect(resumed.status).toBe("failed");
    expect(resumed.error?.code).toBe("APPROVAL_DENIED");
    expect(calls).toEqual(["build"]);
    expect(await query(dbPath, "SELECT count(*) AS n FROM deploy")).toEqual([{ n: 0 }]);
  });

  test("an approval is asked once: a task that fails after it was approved is retried on resume without asking again", async () => {
    const dbPath = tempDbPath();
    let failing = true;
    const { wf, calls, kit } = gatedTask(dbPath, { fail: () => failing });
    await runWorkflow(wf, { input: {}, runId: "r" });
    await approve(kit.smithersDb, { runId: "r" });
    expect((await runWorkflow(wf, { runId: "r", resume: true })).status).toBe("failed");
    failing = false;
    expect((await runWorkflow(wf, { runId: "r", resume: true })).status).toBe("finished");
    expect(calls).toEqual(["build", "deploy", "deploy"]);
    expect(await query(dbPath, "SELECT count(*) AS n FROM _smithers_events WHERE type = 'ApprovalRequested'")).toEqual([{ n: 1 }]);
  });

  test("in a loop each iteration asks, addressed by --iteration", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, Loop, smithers, outputs, smithersDb } = createSmithers({ step: z.object({ i: z.number() }) }, { dbPath });
    const wf = smithers((ctx) => (
      <Workflow name="loop-gate">
        <Loop id="l" until={ctx.iterationCount(outputs.step, "step") >= 2} maxIterations={5}>
          <Task id="step" output={outputs.step} needsApproval>
            {{ i: ctx.iteration }}
          </Task>
        </Loop>
      </Workflow>
    ));
    expect((await runWorkflow(wf, { input: {}, runId: "r" })).status).toBe("waiting-approval");
    await approve(smithersDb, { runId: "r", nodeId: "step", iteration: 0 });
    expect((await runWorkflow(wf, { runId: "r", resume: true })).status).toBe("waiting-approval");
    expect((await rejection(approve(smithersDb, { runId: "r", nodeId: "step", iteration: 0 }))).code).toBe("APPROVAL_DECIDED");
    await approve(smithersDb, { runId: "r", nodeId: "step", iteration: 1 });
    expect((await runWorkflow(wf, { runId: "r", resume: true })).status).toBe("finished");
    expect(await query(dbPath, "SELECT iteration, i FROM step ORDER BY iteration")).toEqual([
      { iteration: 0, i: 0 },
      { iteration: 1, i: 1 },
    ]);
  });

  test("needsApproval that is not a boolean, and async without needsApproval, are refused with INVALID_WORKFLOW", async () => {
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath: tempDbPath() });
    for (const extra of [{ needsApproval: "yes" }, { async: true }]) {
      const wf = smithers(() => (
        <Workflow name="x">
          <Task id="t" output={outputs.out} {...(extra as object)}>
            {{ n: 1 }}
          </Task>
        </Workflow>
      ));
      expect((await runWorkflow(wf, { input: {} })).error?.code).toBe("INVALID_WORKFLOW");
    }
  });
});

describe("async waits", () => {
  /** Branch A: a gate, then `after`; branch B: two tasks, the second slow enough to start after the gate waits. */
  function twoBranches(dbPath: string, gate: "approval" | "task", async: boolean) {
    const kit = createSmithers({ approval: approvalDecisionSchema, done: z.object({ n: z.number() }) }, { dbPath });
    const { Workflow, Task, Approval, Parallel, Sequence, smithers, outputs } = kit;
    const wf = smithers(() => (
      <Workflow name="branches">
        <Parallel>
          <Sequence>
            {gate === "approval" ? (
              <Approval id="gate" output={outputs.approval} request={{ title: "go?" }} async={async} />
            ) : (
              <Task id="gate" output={outputs.done} needsApproval async={async}>
                {{ n: 0 }}
              </Task>
            )}
            <Task id="after" output={outputs.done}>
              {{ n: 1 }}
            </Task>
          </Sequence>
          <Sequence>
            <Task id="b1" output={outputs.done}>
              {async () => {
                await Bun.sleep(20);
                return { n: 2 };
              }}
            </Task>
            <Task id="b2" output={outputs.done}>
              {{ n: 3 }}
            </Task>
          </Sequence>
        </Parallel>
      </Workflow>
    ));
    return { wf, kit };
  }

  for (const gate of ["approval", "task"] as const) {
    test(`with async, a waiting ${gate === "approval" ? "<Approval>" : "<Task needsApproval>"} holds up only what comes after it; without, nothing new starts`, async () => {
      const withAsync = tempDbPath();
      const a = twoBranches(withAsync, gate, true);
      expect((await runWorkflow(a.wf, { input: {}, runId: "r" })).status).toBe("waiting-approval");
      expect(await query(withAsync, "SELECT node_id FROM done ORDER BY node_id")).toEqual([{ node_id: "b1" }, { node_id: "b2" }]);
      await approve(a.kit.smithersDb, { runId: "r" });
      expect((await runWorkflow(a.wf, { runId: "r", resume: true })).status).toBe("finished");
      expect(await query(withAsync, "SELECT node_id FROM done WHERE node_id IN ('after', 'gate') ORDER BY node_id")).toEqual(
        gate === "task" ? [{ node_id: "after" }, { node_id: "gate" }] : [{ node_id: "after" }],
      );

      const without = tempDbPath();
      const b = twoBranches(without, gate, false);
      expect((await runWorkflow(b.wf, { input: {}, runId: "r" })).status).toBe("waiting-approval");
      // b1 started in the step that opened the gate; b2 would start later, so it waits for the decision.
      expect(await query(without, "SELECT node_id FROM done ORDER BY node_id")).toEqual([{ node_id: "b1" }]);
    });
  }
});

describe("a decision while the run is still running", () => {
  test("is taken within a poll, not only when the other branch's long task ends", async () => {
    const dbPath = tempDbPath();
    const kit = createSmithers({ approval: approvalDecisionSchema, done: z.object({ at: z.number() }) }, { dbPath });
    const { Workflow, Task, Approval, Parallel, Sequence, smithers, outputs } = kit;
    const started = Date.now();
    let afterAt = 0;
    let slowEndedAt = 0;
    const wf = smithers(() => (
      <Workflow name="poll">
        <Parallel>
          <Sequence>
            <Approval id="gate" output={outputs.approval} request={{ title: "go?" }} async />
            <Task id="after" output={outputs.done}>
              {() => ({ at: (afterAt = Date.now() - started) })}
            </Task>
          </Sequence>
          <Task id="slow" output={outputs.done}>
            {async () => {
              await Bun.sleep(2_500);
              return { at: (slowEndedAt = Date.now() - started) };
            }}
          </Task>
        </Parallel>
      </Workflow>
    ));
    const run = runWorkflow(wf, { input: {}, runId: "r" });
    await tablesReady(kit.smithersDb);
    await waitFor(async () => (await query(dbPath, "SELECT status FROM _smithers_approvals")).length > 0);
    await approve(kit.smithersDb, { runId: "r" });
    expect((await run).status).toBe("finished");
    expect(afterAt).toBeLessThan(slowEndedAt);
  });
});

describe("<Approval mode>", () => {
  const options = [
    { key: "canary", label: "Canary 5%", summary: "slow and safe" },
    { key: "full", label: "Everyone at once" },
    { key: "none", label: "Do not ship" },
  ];

  function choose(dbPath: string, mode: "select" | "rank", onDeny?: "fail" | "skip") {
    const kit = createSmithers({ pick: approvalSelectionSchema, ranking: approvalRankingSchema, outcome: z.object({ note: z.string() }) }, { dbPath });
    const { Workflow, Task, Approval, smithers, outputs } = kit;
    const wf = smithers((ctx) => (
      <Workflow name="choose">
        <Approval
          id="choice"
          mode={mode}
          options={options}
          onDeny={onDeny}
          output={mode === "select" ? outputs.pick : outputs.ranking}
          request={{ title: "How do we ship?" }}
        />
        <Task id="after" output={outputs.outcome}>
          {() => {
            const picked = ctx.outputMaybe(outputs.pick, { nodeId: "choice" });
            const order = ctx.outputMaybe<{ ranked: string[] }>(outputs.ranking, { nodeId: "choice" });
            return { note: picked ? `picked ${picked.selected}` : order ? `ranked ${order.ranked.join(">")}` : "nothing chosen" };
          }}
        </Task>
      </Workflow>
    ));
    return { wf, kit };
  }

  test("select: the options are stored with the request; the approver's choice is checked against them and becomes the row", async () => {
    const dbPath = tempDbPath();
    const { wf, kit } = choose(dbPath, "select");
    expect((await runWorkflow(wf, { input: {}, runId: "r" })).status).toBe("waiting-approval");
    const [pending] = await pendingApprovals(kit.smithersDb, "r");
    expect(pending?.request).toEqual({ title: "How do we ship?", mode: "select", options });
    for (const bad of [{}, { selected: "half" }, { ranked: ["canary", "full", "none"] }]) {
      const error = await rejection(approve(kit.smithersDb, { runId: "r", ...bad }));
      expect([JSON.stringify(bad), error.code]).toEqual([JSON.stringify(bad), "APPROVAL_INVALID"]);
    }
    expect((await rejection(deny(kit.smithersDb, { runId: "r", selected: "full" }))).code).toBe("APPROVAL_INVALID");
    expect(await query(dbPath, "SELECT status, decision_json FROM _smithers_approvals")).toEqual([{ status: "requested", decision_json: null }]);
    expect(await query(dbPath, "SELECT wake_at_ms FROM _smithers_runs")).toEqual([{ wake_at_ms: null }]);

    await approve(kit.smithersDb, { runId: "r", selected: "canary", note: "start small", by: "ada" });
    expect((await runWorkflow(wf, { runId: "r", resume: true })).status).toBe("finished");
    expect(await query(dbPath, "SELECT node_id, selected, notes FROM pick")).toEqual([{ node_id: "choice", selected: "canary", notes: "start small" }]);
    expect(await query(dbPath, "SELECT note FROM outcome")).toEqual([{ note: "picked canary" }]);
  });

  test("rank: every option once, best first, or APPROVAL_INVALID and nothing stored", async () => {
    const dbPath = tempDbPath();
    const { wf, kit } = choose(dbPath, "rank");
    await runWorkflow(wf, { input: {}, runId: "r" });
    for (const ranked of [[], ["full", "canary"], ["full", "canary", "canary"], ["full", "canary", "none", "half"]]) {
      const error = await rejection(approve(kit.smithersDb, { runId: "r", ranked }));
      expect([ranked.join(","), error.code]).toEqual([ranked.join(","), "APPROVAL_INVALID"]);
    }
    expect(await query(dbPath, "SELECT status FROM _smithers_approvals")).toEqual([{ status: "requested" }]);
    await approve(kit.smithersDb, { runId: "r", ranked: ["full", "canary", "none"] });
    expect((await runWorkflow(wf, { runId: "r", resume: true })).status).toBe("finished");
    expect(await query(dbPath, "SELECT ranked, notes FROM ranking")).toEqual([{ ranked: JSON.stringify(["full", "canary", "none"]), notes: null }]);
    expect(await query(dbPath, "SELECT note FROM outcome")).toEqual([{ note: "ranked full>canary>none" }]);
  });

  test("a denied choice fails the node by default, or skips it with onDeny skip", async () => {
    const failing = tempDbPath();
    const a = choose(failing, "select");
    await runWorkflow(a.wf, { input: {}, runId: "r" });
    await deny(a.kit.smithersDb, { runId: "r" });
    const failed = await runWorkflow(a.wf, { runId: "r", resume: true });
    expect(failed.error?.code).toBe("APPROVAL_DENIED");

    const skipping = tempDbPath();
    const b = choose(skipping, "rank", "skip");
    await runWorkflow(b.wf, { input: {}, runId: "r" });
    await deny(b.kit.smithersDb, { runId: "r" });
    expect((await runWorkflow(b.wf, { runId: "r", resume: true })).status).toBe("finished");
    expect(await query(skipping, "SELECT node_id, state FROM _smithers_nodes ORDER BY node_id")).toEqual([
      { node_id: "after", state: "finished" },
      { node_id: "choice", state: "skipped" },
    ]);
    expect(await query(skipping, "SELECT note FROM outcome")).toEqual([{ note: "nothing chosen" }]);
  });
});
