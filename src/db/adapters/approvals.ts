/**
 * `_smithers_approvals`: one gate per (run, node, iteration). A gate is `requested` until it is
 * decided once, `approved` or `denied`; the decision is guarded by `status = 'requested'`.
 */
import type { InferSelectModel } from "drizzle-orm";
import { and, asc, eq, type SQL } from "drizzle-orm/sql";
import type { ApprovalStatus } from "../constants.ts";
import { smithersApprovals } from "../internal-schema.ts";
import type { Sql } from "../sql.ts";
import type { SmithersDb } from "../store.ts";
import { markRunDue } from "./runs.ts";

export type ApprovalRow = InferSelectModel<typeof smithersApprovals>;
export type ApprovalKey = { runId: string; nodeId: string; iteration?: number };

export type ApprovalRequest = ApprovalKey & {
  requestedAtMs: number;
  /** What the approver is shown (stored as request_json). */
  request?: unknown;
};

export type ApprovalDecision = ApprovalKey & {
  approved: boolean;
  decidedAtMs: number;
  decidedBy?: string | null;
  note?: string | null;
  decision?: unknown;
  /** Set when policy, not a person, decided. */
  autoApproved?: boolean;
};

const byKey = (key: ApprovalKey) =>
  and(eq(smithersApprovals.runId, key.runId), eq(smithersApprovals.nodeId, key.nodeId), eq(smithersApprovals.iteration, key.iteration ?? 0));

/**
 * Opens the gate in `requested` state. Requesting again while it is still requested keeps the
 * first request; a decided gate is never reopened, so a resumed run sees the decision.
 */
export function requestApproval(db: SmithersDb, request: ApprovalRequest): Promise<ApprovalRow> {
  return db.write("requestApproval", async (q) => {
    await requestApprovalIn(q, request);
    return (await q.orm.select().from(smithersApprovals).where(byKey(request)).get()) as ApprovalRow;
  });
}

/** requestApproval inside the caller's transaction (the engine's step); whether the gate is new (or reopened). */
export async function requestApprovalIn(q: Sql, request: ApprovalRequest): Promise<boolean> {
  // A withdrawn gate (see APPROVAL_STATUSES) is asked again when its node waits again (a resumed run).
  const reopened = await q.orm
    .update(smithersApprovals)
    .set({ status: "requested", requestedAtMs: request.requestedAtMs, requestJson: request.request === undefined ? null : JSON.stringify(request.request) })
    .where(and(byKey(request), eq(smithersApprovals.status, "withdrawn")))
    .returning({ runId: smithersApprovals.runId })
    .all();
  if (reopened.length > 0) return true;
  const inserted = await q.orm
    .insert(smithersApprovals)
    .values({
      runId: request.runId,
      nodeId: request.nodeId,
      iteration: request.iteration ?? 0,
      status: "requested",
      requestedAtMs: request.requestedAtMs,
      requestJson: request.request === undefined ? null : JSON.stringify(request.request),
    })
    .onConflictDoNothing()
    .returning({ runId: smithersApprovals.runId })
    .all();
  return inserted.length > 0;
}

/** The gates of one run still waiting for a decision whose node waits for it, or decided ones (what a resume resolves). */
export function readApprovals(q: Sql, runId: string): Promise<ApprovalRow[]> {
  return q.orm.select().from(smithersApprovals).where(eq(smithersApprovals.runId, runId)).all();
}

export function getApproval(db: SmithersDb, key: ApprovalKey): Promise<ApprovalRow | undefined> {
  return db.read("getApproval", (q) => q.orm.select().from(smithersApprovals).where(byKey(key)).get());
}

/** Records the decision if the gate is still `requested`, and makes its run due (markRunDue); returns whether it was. */
export function decideApproval(db: SmithersDb, decision: ApprovalDecision): Promise<boolean> {
  return db.write("decideApproval", async (q) => {
    const decided = await decideApprovalIn(q, decision);
    if (decided) await markRunDue(q, decision.runId, decision.decidedAtMs);
    return decided;
  });
}

/** decideApproval inside the caller's transaction (which also makes the run due). */
export async function decideApprovalIn(q: Sql, decision: ApprovalDecision): Promise<boolean> {
  const status: ApprovalStatus = decision.approved ? "approved" : "denied";
  return (
    (
      await q.orm
        .update(smithersApprovals)
        .set({
          status,
          decidedAtMs: decision.decidedAtMs,
          decidedBy: decision.decidedBy ?? null,
          note: decision.note ?? null,
          decisionJson: decision.decision === undefined ? null : JSON.stringify(decision.decision),
          autoApproved: decision.autoApproved ?? false,
        })
        .where(and(byKey(decision), eq(smithersApprovals.status, "requested")))
        .returning({ runId: smithersApprovals.runId })
        .all()
    ).length > 0
  );
}

/**
 * Withdraws the gates still `requested` of one node (with `nodeId`), or of the whole run, whose
 * waiting ended undecided: they leave the inbox.
 */
export async function withdrawApprovalsIn(q: Sql, key: { runId: string; nodeId?: string; iteration?: number }): Promise<void> {
  const which = key.nodeId === undefined ? eq(smithersApprovals.runId, key.runId) : byKey({ ...key, nodeId: key.nodeId });
  await q.orm
    .update(smithersApprovals)
    .set({ status: "withdrawn" })
    .where(and(which, eq(smithersApprovals.status, "requested")))
    .run();
}

/** Whether a gate was decided (approved or denied), as opposed to still requested or withdrawn. */
export const isDecided = (row: ApprovalRow): boolean => row.status === "approved" || row.status === "denied";

/** Approvals of one run and/or in one state, in (run, node, iteration) order. */
export function listApprovals(db: SmithersDb, filter: { runId?: string; status?: ApprovalStatus } = {}): Promise<ApprovalRow[]> {
  const conditions: SQL[] = [];
  if (filter.runId !== undefined) conditions.push(eq(smithersApprovals.runId, filter.runId));
  if (filter.status !== undefined) conditions.push(eq(smithersApprovals.status, filter.status));
  return db.read("listApprovals", (q) =>
    q.orm
      .select()
      .from(smithersApprovals)
      .where(and(...conditions))
      .orderBy(asc(smithersApprovals.runId), asc(smithersApprovals.nodeId), asc(smithersApprovals.iteration))
      .all(),
  );
}
