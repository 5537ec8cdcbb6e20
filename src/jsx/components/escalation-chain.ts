/**
 * `<EscalationChain>`: agents tried in order, each level only when the one before escalated, and
 * optionally a person at the end. Built from Sequence, Task and Approval; which levels are
 * mounted is decided at render from the rows the levels wrote.
 */
import { z } from "zod";
import type { Agent } from "../../agents/index.ts";
import { SmithersError } from "../../errors/index.ts";
import { makeElement, type SmithersElement, type SmithersNode } from "../element.ts";
import type { ApprovalSpec, OutputTarget } from "../plan.ts";
import { ACCEPTED_PROPS, checkProps } from "../props.ts";
import { renderContext } from "../render-context.ts";
import { Approval } from "./approval.ts";
import { HOST } from "./host.ts";

export type EscalationLevel = {
  agent: Agent | readonly Agent[];
  output: OutputTarget;
  /** The level's task label (default "Escalation level N"). */
  label?: string;
  /** Called with the level's row: true hands the work to the next level. Default: the row has `error`, `failed: true` or `ok: false`. */
  escalateIf?: (result: unknown) => boolean;
};

export type EscalationChainProps = {
  /** The prefix of the chain's node ids (default "escalation"): `<id>-level-N`, `<id>-check-N`, `<id>-human-fallback`. */
  id?: string;
  levels: readonly EscalationLevel[];
  /** After the last level escalated, a person decides (an `<Approval>` writing to escalationOutput). */
  humanFallback?: boolean;
  /** What the person is shown (default: "Escalation requires human review"). */
  humanRequest?: ApprovalSpec["request"];
  /** Where each hand-over (`{ escalated, fromLevel, toLevel }`) and the person's decision are written. */
  escalationOutput: OutputTarget;
  skipIf?: boolean;
  /** The prompt every level's agent is given. */
  children?: SmithersNode;
};

/** A level escalates by default when its row says it failed. */
function defaultEscalateIf(result: unknown): boolean {
  if (typeof result !== "object" || result === null) return false;
  const row = result as Record<string, unknown>;
  return (row.error !== undefined && row.error !== null && row.error !== false) || row.failed === true || row.ok === false;
}

function checkLevels(prefix: string, levels: unknown): readonly EscalationLevel[] {
  const where = `<EscalationChain id="${prefix}">`;
  if (!Array.isArray(levels) || levels.length === 0) {
    throw new SmithersError("INVALID_WORKFLOW", `${where} needs levels={[{ agent, output }, …]} (at least one)`, { prop: "levels" });
  }
  for (const [i, level] of (levels as unknown[]).entries()) {
    if (typeof level !== "object" || level === null) throw new SmithersError("INVALID_WORKFLOW", `${where} level ${i} must be an object { agent, output }`);
    checkProps(`EscalationChain level ${i}`, level, ACCEPTED_PROPS.EscalationLevel);
    const { agent, escalateIf } = level as Partial<EscalationLevel>;
    if (agent === undefined || agent === null) throw new SmithersError("INVALID_WORKFLOW", `${where} level ${i} needs an agent`, { prop: "agent" });
    if (escalateIf !== undefined && typeof escalateIf !== "function") {
      throw new SmithersError("INVALID_WORKFLOW", `${where} level ${i}: escalateIf must be a function of the level's row`, { prop: "escalateIf" });
    }
  }
  return levels as EscalationLevel[];
}

/** A hand-over row must fit escalationOutput, or the chain would fail at its first hand-over: checked now. */
function checkHandOverSchema(prefix: string, target: OutputTarget): void {
  if (!(target instanceof z.ZodObject)) return; // a table key or a custom table: checked when the row is written
  if (!target.safeParse({ escalated: true, fromLevel: 0, toLevel: 1 }).success) {
    throw new SmithersError(
      "INVALID_WORKFLOW",
      `<EscalationChain id="${prefix}"> escalationOutput must take { escalated: boolean, fromLevel: number, toLevel: number } (and, with humanFallback, the decision's approved, note, decidedBy, decidedAt)`,
      { prop: "escalationOutput" },
    );
  }
}

/**
 * Each level is a `<Task continueOnFail>` with the chain's prompt; level N+1 is mounted only once
 * level N escalated: its row made `escalateIf` true, or it ended without a row (it failed). While
 * a level has not run, the next stays mounted behind it (the Sequence holds it) and leaves the
 * plan once the row says the work was resolved; a resolved level ends the chain. After each level
 * but the last, `<id>-check-N` records `{ escalated, fromLevel, toLevel }` in escalationOutput. With `humanFallback`, an `<Approval onDeny="continue">` follows
 * the last level when it escalated too.
 * @example
 * <EscalationChain id="support" escalationOutput={outputs.escalation} humanFallback
 *   levels={[{ agent: fast, output: outputs.tier1, escalateIf: (r) => r.confidence < 0.7 }, { agent: strong, output: outputs.tier2 }]}>
 *   Resolve this ticket: {ctx.input.ticketBody}
 * </EscalationChain>
 */
export function EscalationChain(props: EscalationChainProps): SmithersNode {
  checkProps("EscalationChain", props, ACCEPTED_PROPS.EscalationChain);
  if (props.id !== undefined && (typeof props.id !== "string" || props.id === "")) {
    throw new SmithersError("INVALID_WORKFLOW", "<EscalationChain> id must be a non-empty string", { prop: "id" });
  }
  const prefix = props.id ?? "escalation";
  const levels = checkLevels(prefix, props.levels);
  if (props.escalationOutput === undefined || props.escalationOutput === null) {
    throw new SmithersError("MISSING_OUTPUT", `<EscalationChain id="${prefix}"> has no escalationOutput; pass escalationOutput={outputs.<key>}`);
  }
  checkHandOverSchema(prefix, props.escalationOutput);
  const request = props.humanRequest ?? {
    title: "Escalation requires human review",
    summary: `All ${levels.length} automated levels have been exhausted.`,
  };
  // Built on every render, mounted or not, so its request and schema are checked from the first.
  const fallback = props.humanFallback
    ? Approval({ id: `${prefix}-human-fallback`, output: props.escalationOutput, request, onDeny: "continue", continueOnFail: true, label: request.title })
    : null;
  if (props.skipIf) return null;
  const ctx = renderContext();
  const steps: SmithersElement[] = [];
  for (const [i, level] of levels.entries()) {
    steps.push(
      makeElement(HOST.task, {
        id: `${prefix}-level-${i}`,
        output: level.output,
        agent: level.agent,
        continueOnFail: true,
        label: level.label ?? `Escalation level ${i}`,
        children: props.children,
      }),
    );
    const row = ctx?.outputMaybe(level.output, { nodeId: `${prefix}-level-${i}` });
    // No row: not run yet (the next level waits behind it) or failed (the next level takes over).
    const escalated = row === undefined || Boolean((level.escalateIf ?? defaultEscalateIf)(row));
    if (i + 1 < levels.length) {
      // The hand-over is recorded either way, as the peer does: `escalated: false` says where the chain stopped.
      steps.push(makeElement(HOST.task, { id: `${prefix}-check-${i}`, output: props.escalationOutput, children: { escalated, fromLevel: i, toLevel: i + 1 } }));
    } else if (escalated && fallback) {
      steps.push(fallback);
    }
    if (!escalated) break;
  }
  return makeElement(HOST.sequence, { children: steps });
}
