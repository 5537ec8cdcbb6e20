/**
 * Deciding `<Approval>` gates from outside a run: approve() and deny() record the decision once
 * (a gate is decided at most once, by compare-and-swap on its `requested` state); the waiting run
 * picks it up when it is resumed.
 */
import { approvals, runs, type SmithersDb } from "../../db/index.ts";
import { SmithersError } from "../../errors/index.ts";
import type { ApprovalSpec } from "../../jsx/index.ts";
import type { PendingApproval } from "../../contract/index.ts";
import { isWaiting } from "../core/index.ts";

export type { PendingApproval } from "../../contract/index.ts";

export type DecideOptions = {
  runId: string;
  /** The gate's node id; may be left out when the run has exactly one pending gate. */
  nodeId?: string;
  /** The gate's loop iteration; may be left out when the node has one pending gate. */
  iteration?: number;
  /** Who decided (stored as decided_by). */
  by?: string;
  note?: string;
  /** Approving a `mode="select"` gate: the chosen option's key. */
  selected?: string;
  /** Approving a `mode="rank"` gate: every option's key once, best first. */
  ranked?: readonly string[];
  now?: () => number;
};

export type Decision = { runId: string; nodeId: string; iteration: number; approved: boolean };

/** What a stored gate asks (its request_json), `{}` when it has none or it does not parse. */
export function requestOf(row: approvals.ApprovalRow): PendingApproval["request"] {
  try {
    return row.requestJson ? (JSON.parse(row.requestJson) as PendingApproval["request"]) : {};
  } catch {
    return {};
  }
}

/**
 * The run's gates still waiting for a decision, in (node, iteration) order, then those of its
 * waiting child runs (`<Subflow>`; `runId` says whose gate it is). For a run that continued as new,
 * those of the last run of its chain. RUN_NOT_FOUND for an unknown run.
 */
export async function pendingApprovals(db: SmithersDb, runId: string): Promise<PendingApproval[]> {
  // A run that continued as new: its gates are the last run of its chain's.
  const run = await runs.getChainEnd(db, runId);
  if (!run) throw new SmithersError("RUN_NOT_FOUND", `No run "${runId}" in ${db.path}`, { runId });
  // A run still going (running other work, or waiting) may hold children that wait for a person.
  const going = run.status === "running" || isWaiting(run.status);
  const children = going ? (await runs.listDescendantRuns(db, run.runId)).filter((c) => isWaiting(c.status)) : [];
  const pending: PendingApproval[] = [];
  for (const r of [run, ...children.sort((a, b) => (a.runId < b.runId ? -1 : 1))]) {
    for (const row of await approvals.listApprovals(db, { runId: r.runId, status: "requested" })) {
      pending.push({
        runId: r.runId,
        workflowName: r.workflowName,
        nodeId: row.nodeId,
        iteration: row.iteration,
        requestedAtMs: row.requestedAtMs,
        request: requestOf(row),
      });
    }
  }
  return pending;
}

const describeGate = (rootRunId: string) => (p: PendingApproval) =>
  `${p.nodeId}${p.iteration > 0 ? ` (iteration ${p.iteration})` : ""}${p.runId === rootRunId ? "" : ` in child run ${p.runId}`}: ${p.request.title ?? ""}`;

/** The pending gate `o` points at: by node (and iteration), or the only one. */
export async function findPendingApproval(db: SmithersDb, o: Pick<DecideOptions, "runId" | "nodeId" | "iteration">): Promise<PendingApproval> {
  const pending = await pendingApprovals(db, o.runId);
  if (o.nodeId === undefined) {
    if (pending.length === 1) return pending[0]!;
    if (pending.length === 0) throw new SmithersError("APPROVAL_NOT_FOUND", `Run "${o.runId}" has no approval waiting for a decision`, { runId: o.runId });
    throw new SmithersError(
      "APPROVAL_AMBIGUOUS",
      `Run "${o.runId}" has ${pending.length} approvals waiting; name one with --node:\n${pending.map(describeGate(o.runId)).join("\n")}`,
      {
        runId: o.runId,
        pending: pending.map((p) => ({ nodeId: p.nodeId, iteration: p.iteration })),
      },
    );
  }
  const named = pending.filter((p) => p.nodeId === o.nodeId && (o.iteration === undefined || p.iteration === o.iteration));
  // A child run's gate of the same id does not hide the run's own (decide the child's by its run id).
  const own = named.filter((p) => p.runId === o.runId);
  const matches = own.length > 0 ? own : named;
  if (matches.length === 1) return matches[0]!;
  if (matches.length > 1) {
    throw new SmithersError("APPROVAL_AMBIGUOUS", `Node "${o.nodeId}" waits in ${matches.length} iterations; name one with --iteration`, {
      runId: o.runId,
      nodeId: o.nodeId,
    });
  }
  // Without --iteration, the node's latest gate (a loop's earlier ones were decided before it).
  const decided = (await approvals.listApprovals(db, { runId: o.runId }))
    .filter((r) => r.nodeId === o.nodeId && (o.iteration === undefined || r.iteration === o.iteration))
    .at(-1);
  if (decided && decided.status !== "requested") {
    throw new SmithersError(
      "APPROVAL_DECIDED",
      `Approval "${o.nodeId}" of run "${o.runId}" was already ${decided.status}${decided.decidedBy ? ` by ${decided.decidedBy}` : ""}`,
      {
        runId: o.runId,
        nodeId: o.nodeId,
        status: decided.status,
      },
    );
  }
  throw new SmithersError("APPROVAL_NOT_FOUND", `Run "${o.runId}" has no approval "${o.nodeId}" waiting for a decision`, { runId: o.runId, nodeId: o.nodeId });
}

/**
 * What a select/rank decision stores (decision_json), checked against the gate's options;
 * APPROVAL_INVALID when the choice is missing, unknown, or given to a gate that takes none.
 */
export function checkChoice(
  gate: PendingApproval,
  o: Pick<DecideOptions, "selected" | "ranked">,
  approved: boolean,
): { selected: string } | { ranked: string[] } | undefined {
  const where = { runId: gate.runId, nodeId: gate.nodeId, iteration: gate.iteration };
  const bad = (message: string) => new SmithersError("APPROVAL_INVALID", `Approval "${gate.nodeId}" of run "${gate.runId}": ${message}`, where);
  const mode = gate.request.mode;
  const keys = (gate.request.options ?? []).map((option) => option.key);
  const listed = `the options are: ${keys.join(", ")}`;
  if (o.selected !== undefined && (mode !== "select" || !approved)) throw bad(`a selection only goes with approving a mode "select" gate`);
  if (o.ranked !== undefined && (mode !== "rank" || !approved)) throw bad(`a ranking only goes with approving a mode "rank" gate`);
  if (!approved || (mode !== "select" && mode !== "rank")) return undefined;
  if (mode === "select") {
    if (o.selected === undefined) throw bad(`choose one option (--select KEY); ${listed}`);
    if (!keys.includes(o.selected)) throw bad(`"${o.selected}" is not one of the options; ${listed}`);
    return { selected: o.selected };
  }
  const ranked = [...(o.ranked ?? [])];
  if (ranked.length === 0) throw bad(`rank every option, best first (--rank KEY,KEY,…); ${listed}`);
  const unknown = ranked.filter((k) => !keys.includes(k));
  if (unknown.length > 0) throw bad(`${unknown.map((k) => `"${k}"`).join(", ")} ${unknown.length === 1 ? "is" : "are"} not an option; ${listed}`);
  if (new Set(ranked).size !== ranked.length) throw bad("a ranking names each option once");
  const missing = keys.filter((k) => !ranked.includes(k));
  if (missing.length > 0) throw bad(`the ranking leaves out ${missing.join(", ")}; rank every option`);
  return { ranked };
}

async function decide(db: SmithersDb, o: DecideOptions, approved: boolean): Promise<Decision> {
  const gate = await findPendingApproval(db, o);
  const choice = checkChoice(gate, o, approved);
  const decidedAtMs = (o.now ?? Date.now)();
  // The decision and the run's wake time commit together: the daemon finds the run by its due time.
  const won = await db.withTransaction("decideApproval", async (q) => {
    const changed = await approvals.decideApprovalIn(q, {
      runId: gate.runId,
      nodeId: gate.nodeId,
      iteration: gate.iteration,
      approved,
      decidedAtMs,
      decidedBy: o.by ?? null,
      note: o.note ?? null,
      decision: choice,
    });
    if (changed) await runs.markRunDue(q, gate.runId, decidedAtMs);
    return changed;
  });
  if (!won)
    throw new SmithersError("APPROVAL_DECIDED", `Approval "${gate.nodeId}" of run "${gate.runId}" was decided meanwhile`, {
      runId: gate.runId,
      nodeId: gate.nodeId,
    });
  return { runId: gate.runId, nodeId: gate.nodeId, iteration: gate.iteration, approved };
}

/**
 * Approves a waiting gate (with `selected` or `ranked` for a select or rank gate); the daemon
 * (`smithers supervise`) or a resume (`smithers up … --resume`) continues the run.
 * @example
 * await approve(db, { runId, nodeId: "ship-it", by: "ada", note: "looks good" });
 * await approve(db, { runId, nodeId: "pick-plan", selected: "canary" });
 */
export function approve(db: SmithersDb, o: DecideOptions): Promise<Decision> {
  return decide(db, o, true);
}

/** Denies a waiting gate; the node then fails, continues or is skipped as its `onDeny` says. */
export function deny(db: SmithersDb, o: DecideOptions): Promise<Decision> {
  return decide(db, o, false);
}

/** What `_smithers_approvals.request_json` holds: what the approver is shown, and for select/rank the options. */
export function storedRequest(spec: ApprovalSpec): Record<string, unknown> {
  return { ...spec.request, ...(spec.mode === "approve" ? {} : { mode: spec.mode }), ...(spec.options ? { options: spec.options } : {}) };
}

export const DECISION_SCHEMA_NAME = {
  approve: "approvalDecisionSchema",
  select: "approvalSelectionSchema",
  rank: "approvalRankingSchema",
  gate: "approvalDecisionSchema",
} as const;

/** The row a decided `<Approval>` writes, by mode (approve() checked a select/rank choice against the options). */
export function decisionRow(spec: ApprovalSpec, row: approvals.ApprovalRow, approved: boolean): Record<string, unknown> {
  const decidedAt = row.decidedAtMs == null ? null : new Date(row.decidedAtMs).toISOString();
  const decidedBy = row.decidedBy ?? null;
  if (spec.mode === "select" || spec.mode === "rank") {
    let choice: { selected?: unknown; ranked?: unknown } = {};
    try {
      choice = row.decisionJson ? (JSON.parse(row.decisionJson) as typeof choice) : {};
    } catch {
      // left empty: the output schema refuses the row, and the node fails with INVALID_OUTPUT
    }
    const picked = spec.mode === "select" ? { selected: choice.selected } : { ranked: choice.ranked };
    return { ...picked, notes: row.note ?? null, decidedBy, decidedAt };
  }
  return { approved, note: row.note ?? null, decidedBy, decidedAt };
}
