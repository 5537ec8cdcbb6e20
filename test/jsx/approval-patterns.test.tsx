/** @jsxImportSource smithers-workflows */
/** `<ApprovalGate>`, `<EscalationChain>` and the ids and labels of groups, as render() sees them: props checked, the plan they give. */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import {
  approvalDecisionSchema,
  ApprovalGate,
  type ApprovalGateProps,
  createSmithers,
  deny,
  EscalationChain,
  type EscalationChainProps,
  Parallel,
  render,
  runWorkflow,
  scriptedAgent,
  Sequence,
} from "../../src/index.ts";
import { errorOf, query, tempDbPath } from "../helpers.ts";

const { Workflow, Task, outputs } = createSmithers({
  decision: approvalDecisionSchema,
  out: z.object({ n: z.number() }),
  escalation: z.object({ escalated: z.boolean().optional(), fromLevel: z.number().optional(), toLevel: z.number().optional() }),
});
const spread = (props: Record<string, unknown>) => props as object;
/** Props outside a component's type, to see what the render does with them. */
const untyped = <P,>(props: Record<string, unknown>) => props as P;
const request = { title: "Ship it?" };
const task = (id: string) => (
  <Task id={id} output={outputs.out}>
    {{ n: 1 }}
  </Task>
);

describe("ApprovalGate", () => {
  test("when true renders an approval node, when false a static task holding the auto-approved decision", () => {
    const asked = render(
      <Workflow name="w">
        <ApprovalGate id="g" output={outputs.decision} request={request} when={true} />
      </Workflow>,
    ).tasks[0]!;
    expect([asked.mode, asked.approval?.mode, asked.approval?.onDeny]).toEqual(["approval", "approve", "fail"]);
    const auto = render(
      <Workflow name="w">
        <ApprovalGate id="g" output={outputs.decision} request={request} when={false} />
      </Workflow>,
    ).tasks[0]!;
    expect([auto.mode, auto.label, auto.staticValue]).toEqual([
      "static",
      "Ship it? (auto-approved)",
      { approved: true, note: "auto-approved", decidedBy: null, decidedAt: null },
    ]);
  });

  test("when is required and must be a boolean: a missing one never approves", () => {
    const error = errorOf(() =>
      render(<Workflow name="w">{<ApprovalGate {...untyped<ApprovalGateProps>({ id: "g", output: outputs.decision, request })} />}</Workflow>),
    );
    expect([error.code, error.details?.prop]).toEqual(["INVALID_WORKFLOW", "when"]);
  });

  test("the peer's timeoutMs, retries, retryPolicy and heartbeat props are UNSUPPORTED_PROP, named as the peer's", () => {
    for (const prop of ["timeoutMs", "retries", "retryPolicy", "heartbeatTimeoutMs", "heartbeatTimeout"]) {
      const error = errorOf(() =>
        render(
          <Workflow name="w">
            <ApprovalGate id="g" output={outputs.decision} request={request} when={false} {...spread({ [prop]: 1 })} />
          </Workflow>,
        ),
      );
      expect([error.code, error.details?.prop, error.details?.peerOnly]).toEqual(["UNSUPPORTED_PROP", prop, true]);
    }
  });

  test("an output that cannot hold the decision is refused on either path", () => {
    for (const when of [true, false]) {
      const error = errorOf(() =>
        render(
          <Workflow name="w">
            <ApprovalGate id="g" output={outputs.out} request={request} when={when} />
          </Workflow>,
        ),
      );
      expect([error.code, error.message.startsWith('<ApprovalGate id="g">')]).toEqual(["INVALID_WORKFLOW", true]);
    }
  });

  test("skipIf skips the gate on either path, and continueOnFail lets a denied gate's run go on", async () => {
    const skipped = render(
      <Workflow name="w">
        <ApprovalGate id="g" output={outputs.decision} request={request} when={false} skipIf />
      </Workflow>,
    ).tasks[0]!;
    expect(skipped.skip).toBe(true);

    const dbPath = tempDbPath();
    const kit = createSmithers({ decision: approvalDecisionSchema, out: z.object({ n: z.number() }) }, { dbPath });
    const wf = kit.smithers(() => (
      <kit.Workflow name="w">
        <ApprovalGate id="g" output={kit.outputs.decision} request={request} when={true} continueOnFail />
        <kit.Task id="after" output={kit.outputs.out}>
          {{ n: 2 }}
        </kit.Task>
      </kit.Workflow>
    ));
    expect((await runWorkflow(wf, { input: {}, runId: "r" })).status).toBe("waiting-approval");
    await deny(kit.smithersDb, { runId: "r", nodeId: "g" });
    expect((await runWorkflow(wf, { runId: "r", resume: true })).status).toBe("finished");
    expect(await query(dbPath, "SELECT node_id, state FROM _smithers_nodes ORDER BY node_id")).toEqual([
      { node_id: "after", state: "finished" },
      { node_id: "g", state: "failed" },
    ]);
    expect(await query(dbPath, "SELECT count(*) AS n FROM decision")).toEqual([{ n: 0 }]);
  });

  test('onDeny="continue" writes the denial as the gate\'s row', async () => {
    const dbPath = tempDbPath();
    const kit = createSmithers({ decision: approvalDecisionSchema }, { dbPath });
    const wf = kit.smithers(() => (
      <kit.Workflow name="w">
        <ApprovalGate id="g" output={kit.outputs.decision} request={request} when={true} onDeny="continue" />
      </kit.Workflow>
    ));
    await runWorkflow(wf, { input: {}, runId: "r" });
    await deny(kit.smithersDb, { runId: "r", nodeId: "g", by: "bob" });
    expect((await runWorkflow(wf, { runId: "r", resume: true })).status).toBe("finished");
    expect(await query(dbPath, "SELECT approved, decided_by FROM decision")).toEqual([{ approved: 0, decided_by: "bob" }]);
  });
});

describe("EscalationChain", () => {
  const level = (output = outputs.out) => ({ agent: scriptedAgent([]), output });

  test("outside a run every level is mounted behind the one before, each under continueOnFail, with the default id and labels", () => {
    const plan = render(
      <Workflow name="w">
        <EscalationChain escalationOutput={outputs.escalation} levels={[level(), level()]}>
          Fix it
        </EscalationChain>
      </Workflow>,
    );
    expect(plan.tasks.map((t) => [t.nodeId, t.mode, t.continueOnFail, t.label])).toEqual([
      ["escalation-level-0", "agent", true, "Escalation level 0"],
      ["escalation-check-0", "static", false, undefined],
      ["escalation-level-1", "agent", true, "Escalation level 1"],
    ]);
    expect(plan.tasks[0]!.prompt).toBe("Fix it");
  });

  test("a human fallback needs an escalationOutput that takes the decision too", () => {
    const error = errorOf(() =>
      render(
        <Workflow name="w">
          <EscalationChain escalationOutput={outputs.escalation} humanFallback levels={[level()]} />
        </Workflow>,
      ),
    );
    expect(error.code).toBe("INVALID_WORKFLOW");
  });

  test("levels are checked: at least one, each with an agent and only the level's props; escalationOutput must take a hand-over row", () => {
    const cases: [unknown, string, unknown][] = [
      [[], "INVALID_WORKFLOW", outputs.escalation],
      [[{ output: outputs.out }], "INVALID_WORKFLOW", outputs.escalation],
      [[{ ...level(), retries: 2 }], "UNSUPPORTED_PROP", outputs.escalation],
      [[level()], "INVALID_WORKFLOW", outputs.out],
    ];
    for (const [levels, code, escalationOutput] of cases) {
      const error = errorOf(() => render(<Workflow name="w">{<EscalationChain {...untyped<EscalationChainProps>({ levels, escalationOutput })} />}</Workflow>));
      expect(error.code).toBe(code);
    }
  });

  test("skipIf mounts nothing", () => {
    const plan = render(
      <Workflow name="w">
        <EscalationChain escalationOutput={outputs.escalation} levels={[level()]} skipIf />
        {task("after")}
      </Workflow>,
    );
    expect(plan.tasks.map((t) => t.nodeId)).toEqual(["after"]);
  });

  test("the default escalateIf hands over on a row with ok: false, and the default request asks a person after the last level", async () => {
    const dbPath = tempDbPath();
    const kit = createSmithers(
      {
        answer: z.object({ ok: z.boolean() }),
        escalation: approvalDecisionSchema
          .partial()
          .extend({ escalated: z.boolean().optional(), fromLevel: z.number().optional(), toLevel: z.number().optional() }),
      },
      { dbPath },
    );
    const wf = kit.smithers(() => (
      <kit.Workflow name="w">
        <EscalationChain
          escalationOutput={kit.outputs.escalation}
          humanFallback
          levels={[
            { agent: scriptedAgent([{ ok: false }]), output: kit.outputs.answer },
            { agent: scriptedAgent([{ ok: false }]), output: kit.outputs.answer },
          ]}
        >
          Fix it
        </EscalationChain>
      </kit.Workflow>
    ));
    expect((await runWorkflow(wf, { input: {}, runId: "r" })).status).toBe("waiting-approval");
    expect(await query(dbPath, "SELECT node_id, ok FROM answer ORDER BY node_id")).toEqual([
      { node_id: "escalation-level-0", ok: 0 },
      { node_id: "escalation-level-1", ok: 0 },
    ]);
    const [pending] = await query<{ request_json: string }>(dbPath, "SELECT request_json FROM _smithers_approvals WHERE node_id = 'escalation-human-fallback'");
    expect(JSON.parse(pending!.request_json)).toMatchObject({ title: "Escalation requires human review" });
    // The person's denial is written, not failed: the fallback's onDeny is "continue".
    await deny(kit.smithersDb, { runId: "r", nodeId: "escalation-human-fallback" });
    expect((await runWorkflow(wf, { runId: "r", resume: true })).status).toBe("finished");
    expect(await query(dbPath, "SELECT approved FROM escalation WHERE node_id = 'escalation-human-fallback'")).toEqual([{ approved: 0 }]);
  });
});

describe("group ids and labels", () => {
  test("a Parallel's id and a group's label land on the plan", () => {
    const plan = render(
      <Workflow name="w">
        <Parallel id="checks" label="Checks">
          <Sequence label="Lint">{task("lint")}</Sequence>
        </Parallel>
      </Workflow>,
    );
    const group = plan.root.children[0]!;
    expect(group).toMatchObject({ kind: "parallel", id: "checks", label: "Checks" });
    expect(group.kind === "parallel" && group.children[0]).toMatchObject({ kind: "sequence", label: "Lint" });
  });

  test("two Parallels with one id are DUPLICATE_ID; an empty id or a label that is no string is INVALID_WORKFLOW", () => {
    const twice = errorOf(() =>
      render(
        <Workflow name="w">
          <Parallel id="p">{task("a")}</Parallel>
          <Parallel id="p">{task("b")}</Parallel>
        </Workflow>,
      ),
    );
    expect([twice.code, twice.details?.parallelId]).toEqual(["DUPLICATE_ID", "p"]);
    expect(errorOf(() => render(<Workflow name="w">{<Parallel id="">{task("a")}</Parallel>}</Workflow>)).code).toBe("INVALID_WORKFLOW");
    expect(errorOf(() => render(<Workflow name="w">{<Sequence {...spread({ label: 3 })}>{task("a")}</Sequence>}</Workflow>)).code).toBe("INVALID_WORKFLOW");
  });

  test("a Sequence takes no id, as in the peer: UNSUPPORTED_PROP, not a prop the peer has", () => {
    const error = errorOf(() => render(<Workflow name="w">{<Sequence {...spread({ id: "s" })}>{task("a")}</Sequence>}</Workflow>));
    expect([error.code, error.details?.prop, error.details?.peerOnly]).toEqual(["UNSUPPORTED_PROP", "id", false]);
  });
});
