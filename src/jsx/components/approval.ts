/** `<Approval>`: a task a person decides (approve, select one option, or rank them). */
import { z } from "zod";
import { SmithersError } from "../../errors/index.ts";
import { makeElement, type SmithersElement } from "../element.ts";
import type { ApprovalOption, ApprovalSpec, OutputTarget } from "../plan.ts";
import { ACCEPTED_PROPS, APPROVAL_PEER_ONLY_PROPS, checkProps } from "../props.ts";
import { HOST } from "./host.ts";

/** The row an approve-mode `<Approval>` writes; use it (or a schema with these fields) as its output. */
export const approvalDecisionSchema = z.object({
  approved: z.boolean(),
  note: z.string().nullable(),
  decidedBy: z.string().nullable(),
  /** ISO 8601 time of the decision. */
  decidedAt: z.string().nullable(),
});

/** The row a `mode="select"` `<Approval>` writes: the key of the chosen option. */
export const approvalSelectionSchema = z.object({
  selected: z.string(),
  notes: z.string().nullable(),
});

/** The row a `mode="rank"` `<Approval>` writes: every option's key, best first. */
export const approvalRankingSchema = z.object({
  ranked: z.array(z.string()),
  notes: z.string().nullable(),
});

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
  const invalid = (message: string) => new SmithersError("INVALID_WORKFLOW", `<Approval id="${props.id}"> ${message}`, { nodeId: props.id });
  checkProps("Approval", props, ACCEPTED_PROPS.Approval, APPROVAL_PEER_ONLY_PROPS);
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
