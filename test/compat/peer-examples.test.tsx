/** @jsxImportSource smithers-workflows */
/**
 * The three examples of smithers-orchestrator's documentation that did not run here: the
 * "<ApprovalGate>" and "<EscalationChain>" pages, the "<Parallel>" page's kanban with
 * `<Parallel id>`, and a loop's `onMaxReached="fail"`, which the peer's users recognise by
 * `RALPH_MAX_REACHED`. Each is the docs' workflow with its imports changed, run for real, its rows
 * asserted; in our own words.
 */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import {
  approvalDecisionSchema,
  ApprovalGate,
  approve,
  createSmithers,
  deny,
  EscalationChain,
  Parallel,
  runWorkflow,
  scriptedAgent,
  Sequence,
  SmithersError,
  type SmithersElement,
  TryCatchFinally,
} from "../../src/index.ts";
import { readFrameXml } from "../../src/engine/index.ts";
import { type ScriptedReply, testWorkflow } from "../../src/testing/index.ts";
import { query, tempDbPath } from "../helpers.ts";

describe("<ApprovalGate> (smithers-orchestrator docs)", () => {
  /** The docs' deploy pipeline: the risk task's level decides whether a person is asked. */
  function deployPipeline(level: "low" | "high") {
    const dbPath = tempDbPath();
    const kit = createSmithers(
      {
        riskScore: z.object({ level: z.enum(["low", "high"]), score: z.number() }),
        deployDecision: approvalDecisionSchema,
        deploy: z.object({ deployed: z.boolean() }),
      },
      { dbPath },
    );
    const { Workflow, Task, smithers, outputs } = kit;
    const riskAgent = scriptedAgent([{ level, score: level === "high" ? 91 : 12 }]);
    const wf = smithers((ctx) => {
      const risk = ctx.outputMaybe(outputs.riskScore, { nodeId: "risk" });
      return (
        <Workflow name="deploy-pipeline">
          <Sequence>
            <Task id="risk" output={outputs.riskScore} agent={riskAgent}>
              Assess deploy risk.
            </Task>
            <ApprovalGate
              id="deploy-approval"
              output={outputs.deployDecision}
              when={risk?.level === "high"}
              request={{ title: "Approve high-risk deploy?", summary: `Risk score: ${risk?.score}/100` }}
              onDeny="fail"
            />
            <Task id="deploy" output={outputs.deploy}>
              {{ deployed: true }}
            </Task>
          </Sequence>
        </Workflow>
      );
    });
    return { dbPath, wf, kit };
  }

  test("below the threshold the gate approves itself with the decision's shape and the deploy runs, no one asked", async () => {
    const { dbPath, wf } = deployPipeline("low");
    const result = await runWorkflow(wf, { input: {}, runId: "r" });
    expect(result.status).toBe("finished");
    expect(await query(dbPath, "SELECT node_id, approved, note, decided_by, decided_at FROM deploy_decision")).toEqual([
      { node_id: "deploy-approval", approved: 1, note: "auto-approved", decided_by: null, decided_at: null },
    ]);
    expect(await query(dbPath, "SELECT node_id, deployed FROM deploy")).toEqual([{ node_id: "deploy", deployed: 1 }]);
    expect(await query(dbPath, "SELECT count(*) AS n FROM _smithers_approvals")).toEqual([{ n: 0 }]);
  });

  test("above it the run waits for a person; approved, the decision is the gate's row and the deploy runs", async () => {
    const { dbPath, wf, kit } = deployPipeline("high");
    expect(await runWorkflow(wf, { input: {}, runId: "r" })).toEqual({ runId: "r", status: "waiting-approval" });
    expect(await query(dbPath, "SELECT count(*) AS n FROM deploy")).toEqual([{ n: 0 }]);
    await approve(kit.smithersDb, { runId: "r", nodeId: "deploy-approval", by: "ada", note: "go" });
    expect((await runWorkflow(wf, { runId: "r", resume: true })).status).toBe("finished");
    expect(await query(dbPath, "SELECT node_id, approved, note, decided_by FROM deploy_decision")).toEqual([
      { node_id: "deploy-approval", approved: 1, note: "go", decided_by: "ada" },
    ]);
    expect(await query(dbPath, "SELECT node_id, deployed FROM deploy")).toEqual([{ node_id: "deploy", deployed: 1 }]);
  });

  test('denied with onDeny="fail", the run fails with APPROVAL_DENIED and nothing is deployed', async () => {
    const { dbPath, wf, kit } = deployPipeline("high");
    await runWorkflow(wf, { input: {}, runId: "r" });
    await deny(kit.smithersDb, { runId: "r", nodeId: "deploy-approval", note: "freeze" });
    const resumed = await runWorkflow(wf, { runId: "r", resume: true });
    expect([resumed.status, resumed.error?.code]).toEqual(["failed", "APPROVAL_DENIED"]);
    expect(await query(dbPath, "SELECT count(*) AS n FROM deploy")).toEqual([{ n: 0 }]);
  });
});

describe("<EscalationChain> (smithers-orchestrator docs)", () => {
  const schemas = {
    tier1: z.object({ answer: z.string(), confidence: z.number() }),
    tier2: z.object({ answer: z.string(), confidence: z.number() }),
    // Takes both the hand-over rows and the person's decision.
    escalation: z.object({
      escalated: z.boolean().optional(),
      fromLevel: z.number().optional(),
      toLevel: z.number().optional(),
      approved: z.boolean().optional(),
      note: z.string().nullable().optional(),
      decidedBy: z.string().nullable().optional(),
      decidedAt: z.string().nullable().optional(),
    }),
  };

  /** The docs' support ticket: a fast agent, a stronger one, then a person. */
  function supportTicket(tier1: ScriptedReply, tier2: ScriptedReply) {
    const dbPath = tempDbPath();
    const kit = createSmithers(schemas, { dbPath });
    const { Workflow, smithers, outputs } = kit;
    const fastAgent = scriptedAgent([tier1], { id: "fast" });
    const powerAgent = scriptedAgent([tier2], { id: "power" });
    const wf = smithers((ctx) => (
      <Workflow name="support-ticket">
        <EscalationChain
          id="support"
          escalationOutput={outputs.escalation}
          humanFallback
          humanRequest={{ title: "Ticket needs human support", summary: "Agents could not resolve." }}
          levels={[
            { agent: fastAgent, output: outputs.tier1, label: "Tier 1", escalateIf: (r) => (r as { confidence: number }).confidence < 0.7 },
            { agent: powerAgent, output: outputs.tier2, label: "Tier 2", escalateIf: (r) => (r as { confidence: number }).confidence < 0.9 },
          ]}
        >
          Resolve this ticket: {(ctx.input as { ticketBody: string }).ticketBody}
        </EscalationChain>
      </Workflow>
    ));
    return { dbPath, wf, kit, fastAgent, powerAgent };
  }

  test("a confident first level ends the chain: the hand-over row says escalated false and the second agent is never called", async () => {
    const { dbPath, wf, fastAgent, powerAgent } = supportTicket({ answer: "reset the router", confidence: 0.8 }, { answer: "unused", confidence: 1 });
    expect((await runWorkflow(wf, { input: { ticketBody: "wifi down" } })).status).toBe("finished");
    expect(fastAgent.calls[0]?.prompt).toContain("Resolve this ticket: wifi down");
    expect(powerAgent.calls).toEqual([]);
    expect(await query(dbPath, "SELECT node_id, answer FROM tier1")).toEqual([{ node_id: "support-level-0", answer: "reset the router" }]);
    expect(await query(dbPath, "SELECT count(*) AS n FROM tier2")).toEqual([{ n: 0 }]);
    expect(await query(dbPath, "SELECT node_id, escalated, from_level, to_level FROM escalation")).toEqual([
      { node_id: "support-check-0", escalated: 0, from_level: 0, to_level: 1 },
    ]);
  });

  test("a level below its threshold hands the ticket to the next, which resolves it; no person is asked", async () => {
    const { dbPath, wf, powerAgent } = supportTicket({ answer: "maybe dns", confidence: 0.5 }, { answer: "replace the cable", confidence: 0.95 });
    expect((await runWorkflow(wf, { input: { ticketBody: "wifi down" } })).status).toBe("finished");
    expect(powerAgent.calls[0]?.prompt).toContain("Resolve this ticket: wifi down");
    expect(await query(dbPath, "SELECT node_id, answer FROM tier2")).toEqual([{ node_id: "support-level-1", answer: "replace the cable" }]);
    expect(await query(dbPath, "SELECT node_id, escalated FROM escalation")).toEqual([{ node_id: "support-check-0", escalated: 1 }]);
    expect(await query(dbPath, "SELECT count(*) AS n FROM _smithers_approvals")).toEqual([{ n: 0 }]);
  });

  test("when every level escalates a person decides, and the decision is written to escalationOutput", async () => {
    const { dbPath, wf, kit } = supportTicket({ answer: "?", confidence: 0.1 }, { answer: "??", confidence: 0.3 });
    expect((await runWorkflow(wf, { input: { ticketBody: "wifi down" }, runId: "t" })).status).toBe("waiting-approval");
    await approve(kit.smithersDb, { runId: "t", nodeId: "support-human-fallback", by: "grace" });
    expect((await runWorkflow(wf, { runId: "t", resume: true })).status).toBe("finished");
    expect(await query(dbPath, "SELECT node_id, escalated, approved, decided_by FROM escalation ORDER BY node_id")).toEqual([
      { node_id: "support-check-0", escalated: 1, approved: null, decided_by: null },
      { node_id: "support-human-fallback", escalated: null, approved: 1, decided_by: "grace" },
    ]);
  });

  test("a level that fails outright escalates too (each level runs under continueOnFail)", async () => {
    // The kit's virtual clock: the failing level's retries back off without real waiting.
    const { wf, fastAgent } = supportTicket(new Error("rate limited"), { answer: "replace the cable", confidence: 0.95 });
    await using t = await testWorkflow(wf);
    const started = await t.run({ ticketBody: "wifi down" });
    expect(started.status).toBe("running"); // waiting for the clock: the first level's retry backoff
    await t.clock.advance(60_000); // past the backoffs (1 s, 2 s, 4 s)
    const run = await t.resume(started.runId);
    expect(run.status).toBe("finished");
    expect(fastAgent.calls.length).toBe(4); // the first attempt and its 3 retries
    expect(t.output(run.runId, "support-level-0")).toBeUndefined();
    expect(t.output(run.runId, "support-level-1")).toEqual({ answer: "replace the cable", confidence: 0.95 });
    expect(t.output(run.runId, "support-check-0")).toMatchObject({ escalated: true, fromLevel: 0, toLevel: 1 });
  });
});

describe("<Parallel id> (smithers-orchestrator docs, the kanban)", () => {
  test("tickets in a Parallel with an id, each a Sequence with its own reviews Parallel: every row written, the ids on the frame's groups", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs, smithersDb } = createSmithers(
      { impl: z.object({ ticket: z.string() }), review: z.object({ ok: z.boolean() }) },
      { dbPath },
    );
    const tickets = [
      { id: "t1", title: "Login page" },
      { id: "t2", title: "Search" },
      { id: "t3", title: "Billing" },
    ];
    const coder = scriptedAgent((call) => ({ ticket: /Implement (.*)/.exec(call.prompt)?.[1] ?? "" }));
    const reviewers = ["a", "b"].map((id) => ({ id, agent: scriptedAgent(() => ({ ok: true }), { id }) }));
    const wf = smithers(() => (
      <Workflow name="kanban">
        <Parallel id="tickets" subtreeConcurrency={2}>
          {tickets.map((ticket) => (
            <Sequence key={ticket.id} label={ticket.title}>
              <Task id={`${ticket.id}-implement`} agent={coder} output={outputs.impl}>
                Implement {ticket.title}
              </Task>
              <Parallel id={`${ticket.id}-reviews`} maxConcurrency={3}>
                {reviewers.map((reviewer) => (
                  <Task key={reviewer.id} id={`${ticket.id}-review-${reviewer.id}`} agent={reviewer.agent} output={outputs.review}>
                    Review the implementation of {ticket.title}
                  </Task>
                ))}
              </Parallel>
            </Sequence>
          ))}
        </Parallel>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {}, runId: "k" });
    expect(result.status).toBe("finished");
    expect(await query(dbPath, "SELECT node_id, ticket FROM impl ORDER BY node_id")).toEqual([
      { node_id: "t1-implement", ticket: "Login page" },
      { node_id: "t2-implement", ticket: "Search" },
      { node_id: "t3-implement", ticket: "Billing" },
    ]);
    expect(await query(dbPath, "SELECT count(*) AS n FROM review WHERE ok = 1")).toEqual([{ n: 6 }]);
    const [last] = await query<{ n: number }>(dbPath, "SELECT max(frame_no) AS n FROM _smithers_frames WHERE run_id = 'k'");
    const xml = await readFrameXml(smithersDb, "k", last!.n);
    expect(xml).toContain('<parallel id="tickets"');
    expect(xml).toContain('<sequence label="Search"');
    expect(xml).toContain('<parallel id="t2-reviews"');
  });
});

describe("a loop's maxIterations failure (smithers-orchestrator docs)", () => {
  type Kit = ReturnType<typeof kitOf>;
  const kitOf = (dbPath: string) => createSmithers({ fix: z.object({ n: z.number() }), note: z.object({ code: z.string() }) }, { dbPath });
  function neverConverges(dbPath: string, wrap: (loop: SmithersElement, Task: Kit["Task"]) => SmithersElement = (loop) => loop) {
    const { Workflow, Task, Loop, smithers, outputs } = kitOf(dbPath);
    return smithers((ctx) => (
      <Workflow name="fix-tests">
        {wrap(
          <Loop id="fix" until={false} maxIterations={2} onMaxReached="fail">
            <Task id="attempt" output={outputs.fix}>
              {{ n: ctx.iteration }}
            </Task>
          </Loop>,
          Task,
        )}
        <Task id="after" output={outputs.note}>
          {{ code: "went on" }}
        </Task>
      </Workflow>
    ));
  }

  test("fails the run with the peer's RALPH_MAX_REACHED, which SmithersError.is also knows by its former name here", async () => {
    const dbPath = tempDbPath();
    const result = await runWorkflow(neverConverges(dbPath), { input: {} });
    expect([result.status, result.error?.code]).toEqual(["failed", "RALPH_MAX_REACHED"]);
    expect(result.error?.details).toMatchObject({ ralphId: "fix", maxIterations: 2 });
    expect(SmithersError.is(result.error, "RALPH_MAX_REACHED")).toBe(true);
    expect(SmithersError.is(result.error, "LOOP_MAX_REACHED")).toBe(true);
    expect(await query(dbPath, "SELECT count(*) AS n FROM fix")).toEqual([{ n: 2 }]);
  });

  for (const code of ["RALPH_MAX_REACHED", "LOOP_MAX_REACHED"]) {
    test(`<TryCatchFinally catchErrors={["${code}"]}> catches it and the run goes on`, async () => {
      const dbPath = tempDbPath();
      const wf = neverConverges(dbPath, (loop, Task) => (
        <TryCatchFinally
          id="guard"
          try={loop}
          catchErrors={[code]}
          catch={(error) => (
            <Task id="report" output={"note"}>
              {{ code: error.code }}
            </Task>
          )}
        />
      ));
      expect((await runWorkflow(wf, { input: {} })).status).toBe("finished");
      expect(await query(dbPath, "SELECT node_id, code FROM note ORDER BY node_id")).toEqual([
        { node_id: "after", code: "went on" },
        { node_id: "report", code: "RALPH_MAX_REACHED" },
      ]);
    });
  }
});
