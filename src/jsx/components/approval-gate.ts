/** `<ApprovalGate>`: a person decides only when `when` is true; otherwise the gate approves itself. */
import { SmithersError } from "../../errors/index.ts";
import { makeElement, type SmithersElement } from "../element.ts";
import type { ApprovalSpec, OutputTarget } from "../plan.ts";
import { ACCEPTED_PROPS, APPROVAL_PEER_ONLY_PROPS, checkProps } from "../props.ts";
import { Approval } from "./approval.ts";
import { HOST } from "./host.ts";

export type ApprovalGateProps = {
  id: string;
  /** Where the decision row goes (approvalDecisionSchema, or a schema with its fields). */
  output: OutputTarget;
  request: ApprovalSpec["request"];
  /** true: a person decides (the run waits); false: the gate writes an approved row at once. Required. */
  when: boolean;
  /** What a person's denial does (see `<Approval onDeny>`); an auto-approved gate is never denied. */
  onDeny?: ApprovalSpec["onDeny"];
  skipIf?: boolean;
  /** A denial under `onDeny="fail"` (the default) fails the gate but not the run. */
  continueOnFail?: boolean;
};

/** The row an auto-approved gate writes: the shape a person's decision has, so what follows branches the same way. */
const AUTO_APPROVED_ROW = { approved: true, note: "auto-approved", decidedBy: null, decidedAt: null } as const;

/**
 * A conditional approval: with `when` true it is an `<Approval>` (the run waits for
 * `smithers approve|deny`); with `when` false it writes `{ approved: true, note: "auto-approved" }`
 * to its output without asking anyone. `when` is read at each render until the gate runs, so
 * it may come from an earlier task's row.
 * @example
 * <ApprovalGate id="deploy-approval" output={outputs.decision} when={risk.level === "high"}
 *   request={{ title: "Approve high-risk deploy?", summary: `Risk ${risk.score}/100` }} onDeny="fail" />
 */
export function ApprovalGate(props: ApprovalGateProps): SmithersElement {
  checkProps("ApprovalGate", props, ACCEPTED_PROPS.ApprovalGate, APPROVAL_PEER_ONLY_PROPS);
  // A missing `when` must not mean "approve": a gated deploy would run ungated.
  if (typeof props.when !== "boolean") {
    throw new SmithersError("INVALID_WORKFLOW", `<ApprovalGate id="${props.id}"> needs when={true|false} (true: a person decides), got ${String(props.when)}`, {
      nodeId: props.id,
      prop: "when",
    });
  }
  const { when, ...approvalProps } = props;
  // Built either way: the request, onDeny and the output schema are checked whichever path this render takes.
  const asked = Approval(approvalProps);
  if (when) return asked;
  const { id, output, skipIf, continueOnFail, request } = props;
  // Validated by the schema a person's decision would be, so both paths accept the same outputs.
  const outputSchema = (asked.props as { outputSchema?: unknown }).outputSchema;
  return makeElement(HOST.task, {
    id,
    output,
    outputSchema,
    skipIf,
    continueOnFail,
    label: `${request.title} (auto-approved)`,
    children: { ...AUTO_APPROVED_ROW },
  });
}
