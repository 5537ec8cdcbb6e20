/**
 * `<Approval>`: a task a person decides (approve, select one option, or rank them); and
 * `<ApprovalGate>`, which asks only when its condition holds and otherwise approves itself.
 */
import { z } from "zod";
import { SmithersError } from "../../errors/index.ts";
import { lazyShape } from "../../schema/index.ts";
import { makeElement, type SmithersElement } from "../element.ts";
import type { ApprovalOption, ApprovalSpec, OutputTarget } from "../plan.ts";
import { ACCEPTED_PROPS, APPROVAL_PEER_ONLY_PROPS, checkProps } from "../props.ts";
import { HOST } from "./host.ts";

// The fields are made on the first read of each schema's shape (lazyShape): built at import, the
// three are ~1.5 ms of zod in every process that loads the package, most of which decides nothing.

/** The row an approve-mode `<Approval>` writes; use it (or a schema with these fields) as its output. */
export const approvalDecisionSchema = z.object(
  lazyShape({
    approved: () => z.boolean(),
    note: () => z.string().nullable(),
    decidedBy: () => z.string().nullable(),
    /** ISO 8601 time of the decision. */
    decidedAt: () => z.string().nullable(),
  }),
);

/** The row a `mode="select"` `<Approval>` writes: the key of the chosen option. */
export const approvalSelectionSchema = z.object(
  lazyShape({
    selected: () => z.string(),
    notes: () => z.string().nullable(),
  }),
);

/** The row a `mode="rank"` `<Approval>` writes: every option's key, best first. */
export const approvalRankingSchema = z.object(
  lazyShape({
    ranked: () => z.array(z.string()),
    notes: () => z.string().nullable(),
  }),
);

export type ApprovalProps = {
  id: string;
  output: OutputTarget;
  outputSchema?: z.ZodObject;
  request: ApprovalSpec["request"];
  onDeny?: ApprovalSpec["onDeny"];
  /** `approve` (default) writes approvalDecisionSchema; `select` and `rank` choose among `options`. */
  mode?: "approve" | "select" | "rank";
  /** Required for `select` and `rank`: what the person chooses among (unique keys). */
  options?: readonly ApprovalOption[];
  /** Only what depends on the approval waits (later in its Sequence, dependsOn); other branches run on. */
  async?: boolean;
  skipIf?: boolean;
  /** A denial under `onDeny="fail"` fails this node but not the run: what follows goes on, as after any continueOnFail task. */
  continueOnFail?: boolean;
  dependsOn?: readonly string[];
  /** Named upstream node ids the approval waits for, like dependsOn. */
  needs?: Record<string, string>;
  label?: string;
};

/** Marks the task element an `<Approval>` renders to (a prop name no author writes). */
export const APPROVAL_GATE = "smithers:approval";

const DEFAULT_APPROVAL_SCHEMA = { approve: approvalDecisionSchema, select: approvalSelectionSchema, rank: approvalRankingSchema } as const;

/** The options of a select/rank approval, checked: a non-empty array of `{ key, label }` with unique keys. */
function checkOptions(options: unknown, invalid: (message: string) => SmithersError): readonly ApprovalOption[] {
  if (!Array.isArray(options) || options.length === 0) throw invalid("needs options={[{ key, label }, …]} (at least one) for this mode");
  const keys = new Set<string>();
  for (const option of options as unknown[]) {
    const o = option as Partial<ApprovalOption> | null;
    if (typeof o !== "object" || o === null || typeof o.key !== "string" || o.key === "" || typeof o.label !== "string") {
      throw invalid(`each option needs a non-empty string key and a string label, got ${JSON.stringify(option)}`);
    }
    if (keys.has(o.key)) throw invalid(`option key "${o.key}" appears twice`);
    keys.add(o.key);
  }
  return options as ApprovalOption[];
}

/** The output schema must take the row the mode writes, or a person would decide for nothing: checked now, not after. */
function checkDecisionSchema(
  mode: "approve" | "select" | "rank",
  options: readonly ApprovalOption[] | undefined,
  props: ApprovalProps,
  invalid: (message: string) => SmithersError,
): void {
  const schema = props.outputSchema ?? (props.output instanceof z.ZodObject ? props.output : undefined);
  if (!schema) return; // a custom table without outputSchema: checked when the row is written
  const keys = (options ?? []).map((o) => o.key);
  const sample =
    mode === "select"
      ? { selected: keys[0], notes: null, decidedBy: null, decidedAt: null }
      : mode === "rank"
        ? { ranked: keys, notes: null, decidedBy: null, decidedAt: null }
        : { approved: true, note: null, decidedBy: null, decidedAt: null };
  if (!schema.safeParse(sample).success) {
    const name = { approve: "approvalDecisionSchema", select: "approvalSelectionSchema", rank: "approvalRankingSchema" }[mode];
    throw invalid(`its output schema does not take the row mode "${mode}" writes; use ${name} (or a schema with its fields)`);
  }
}

/**
 * A durable human decision: the run waits (status `waiting-approval`, its process may exit) until
 * someone runs `smithers approve|deny` or calls approve()/deny(), then continues once resumed; the
 * decision is the node's output row (approvalDecisionSchema; with `mode="select"` the chosen
 * option's key, approvalSelectionSchema; with `mode="rank"` every key in order, approvalRankingSchema).
 * @example
 * <Approval id="ship-it" output={outputs.approval} request={{ title: "Deploy to production?" }} />
 */
export function Approval(props: ApprovalProps): SmithersElement {
  checkProps("Approval", props, ACCEPTED_PROPS.Approval, APPROVAL_PEER_ONLY_PROPS);
  return approvalElement("Approval", props);
}

/** The task element of an approval, its props checked; `component` names it in errors (`<ApprovalGate>` builds on it). */
function approvalElement(component: string, props: ApprovalProps): SmithersElement {
  const invalid = (message: string) => new SmithersError("INVALID_WORKFLOW", `<${component} id="${props.id}"> ${message}`, { nodeId: props.id });
  const mode = props.mode ?? "approve";
  if (mode !== "approve" && mode !== "select" && mode !== "rank") throw invalid(`mode must be "approve", "select" or "rank", got "${String(mode)}"`);
  if (!props.request || typeof props.request.title !== "string" || props.request.title === "") throw invalid("needs request={{ title }}");
  const onDeny = props.onDeny ?? "fail";
  if (!["fail", "continue", "skip"].includes(onDeny)) throw invalid(`onDeny must be "fail", "continue" or "skip", got "${String(onDeny)}"`);
  let options: readonly ApprovalOption[] | undefined;
  if (mode === "approve") {
    if (props.options !== undefined) throw invalid('options only apply to mode "select" or "rank"');
  } else {
    options = checkOptions(props.options, invalid);
    // A denied choice has no selection or ranking to write.
    if (onDeny === "continue") throw invalid(`onDeny "continue" does not apply to mode "${mode}" (a denial chooses nothing); use "fail" or "skip"`);
  }
  if (props.async !== undefined && typeof props.async !== "boolean") throw invalid("async must be true or false");
  checkDecisionSchema(mode, options, props, invalid);
  const spec: ApprovalSpec = { mode, request: props.request, onDeny, ...(options ? { options } : {}) };
  const { request: _r, onDeny: _o, mode: _m, options: _p, ...rest } = props;
  return makeElement(HOST.task, { ...rest, outputSchema: props.outputSchema ?? DEFAULT_APPROVAL_SCHEMA[mode], children: null, [APPROVAL_GATE]: spec });
}

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
  const asked = approvalElement("ApprovalGate", approvalProps);
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
