/**
 * `_smithers_human_requests`: form fills, confirmations and prompts waiting for a person.
 * A request is `pending` until it is answered, cancelled or expired; each of those transitions
 * is guarded by `status = 'pending'`, so at most one of them ever wins.
 */
import { and, asc, eq, getTableColumns, isNotNull, lte, type InferInsertModel, type InferSelectModel } from "drizzle-orm";
import { smithersHumanRequests, smithersNodes, smithersRuns } from "../internal-schema.ts";
import type { Drizzle, SmithersDb } from "../smithers-db.ts";
import { immediate } from "./shared.ts";

export type HumanRequestRow = InferSelectModel<typeof smithersHumanRequests>;
export type NewHumanRequest = Omit<InferInsertModel<typeof smithersHumanRequests>, "status" | "responseJson" | "answeredAtMs" | "answeredBy">;

/** A pending request with the context an inbox shows next to it. */
export type PendingHumanRequest = HumanRequestRow & {
  workflowName: string | null;
  runStatus: string | null;
  nodeLabel: string | null;
};

const pending = eq(smithersHumanRequests.status, "pending");

/** createHumanRequest inside the caller's transaction (the engine's step); an existing id is kept. */
export function createHumanRequestIn(d: Drizzle, request: NewHumanRequest): void {
  d.insert(smithersHumanRequests)
    .values({ ...request, status: "pending" })
    .onConflictDoNothing()
    .run();
}

/** A run's requests (any state) inside the caller's transaction, oldest first. */
export function readHumanRequests(d: Drizzle, runId: string): HumanRequestRow[] {
  return d
    .select()
    .from(smithersHumanRequests)
    .where(eq(smithersHumanRequests.runId, runId))
    .orderBy(asc(smithersHumanRequests.requestedAtMs), asc(smithersHumanRequests.requestId))
    .all();
}

/** Moves a node's pending requests to `expired` (the node timed out), inside the caller's transaction. */
export function expireNodeRequestsIn(d: Drizzle, node: { runId: string; nodeId: string; iteration: number }): void {
  d.update(smithersHumanRequests)
    .set({ status: "expired" })
    .where(
      and(
        eq(smithersHumanRequests.runId, node.runId),
        eq(smithersHumanRequests.nodeId, node.nodeId),
        eq(smithersHumanRequests.iteration, node.iteration),
        pending,
      ),
    )
    .run();
}

/** Records a new request in `pending` state. */
export function createHumanRequest(db: SmithersDb, request: NewHumanRequest): Promise<void> {
  return db.write("createHumanRequest", (d) => {
    d.insert(smithersHumanRequests)
      .values({ ...request, status: "pending" })
      .run();
  });
}

export function getHumanRequest(db: SmithersDb, requestId: string): Promise<HumanRequestRow | undefined> {
  return db.read("getHumanRequest", (d) => readHumanRequest(d, requestId));
}

/** getHumanRequest inside the caller's transaction. */
export function readHumanRequest(d: Drizzle, requestId: string): HumanRequestRow | undefined {
  return d.select().from(smithersHumanRequests).where(eq(smithersHumanRequests.requestId, requestId)).get();
}

/** Every request of a run (any state), oldest first. */
export function listHumanRequestsForRun(db: SmithersDb, runId: string): Promise<HumanRequestRow[]> {
  return db.read("listHumanRequestsForRun", (d) =>
    d
      .select()
      .from(smithersHumanRequests)
      .where(eq(smithersHumanRequests.runId, runId))
      .orderBy(asc(smithersHumanRequests.requestedAtMs), asc(smithersHumanRequests.requestId))
      .all(),
  );
}

function expireOverdue(d: Drizzle, nowMs: number): number {
  return d
    .update(smithersHumanRequests)
    .set({ status: "expired" })
    .where(and(pending, isNotNull(smithersHumanRequests.timeoutAtMs), lte(smithersHumanRequests.timeoutAtMs, nowMs)))
    .returning({ requestId: smithersHumanRequests.requestId })
    .all().length;
}

/** Moves pending requests whose timeout has passed to `expired`; returns how many moved. */
export function expireHumanRequests(db: SmithersDb, nowMs: number): Promise<number> {
  return db.write("expireHumanRequests", (d) => expireOverdue(d, nowMs));
}

/**
 * The inbox: all pending requests across runs, oldest first, with workflow name, run status and
 * node label. Overdue requests are expired first, in the same transaction, so none is shown.
 * @example
 * for (const r of await listPendingHumanRequests(db, Date.now())) console.log(r.workflowName, r.prompt);
 */
export function listPendingHumanRequests(db: SmithersDb, nowMs: number): Promise<PendingHumanRequest[]> {
  return immediate(db, "listPendingHumanRequests", (d) => {
    expireOverdue(d, nowMs);
    return readPendingWithRuns(d);
  });
}

/** Pending requests, oldest first, with workflow name, run status and node label (nothing expired here). */
export function readPendingWithRuns(d: Drizzle): PendingHumanRequest[] {
  return d
    .select({
      ...getTableColumns(smithersHumanRequests),
      workflowName: smithersRuns.workflowName,
      runStatus: smithersRuns.status,
      nodeLabel: smithersNodes.label,
    })
    .from(smithersHumanRequests)
    .leftJoin(smithersRuns, eq(smithersRuns.runId, smithersHumanRequests.runId))
    .leftJoin(
      smithersNodes,
      and(
        eq(smithersNodes.runId, smithersHumanRequests.runId),
        eq(smithersNodes.nodeId, smithersHumanRequests.nodeId),
        eq(smithersNodes.iteration, smithersHumanRequests.iteration),
      ),
    )
    .where(pending)
    .orderBy(asc(smithersHumanRequests.requestedAtMs), asc(smithersHumanRequests.requestId))
    .all();
}

export type HumanAnswer = {
  requestId: string;
  response: unknown;
  answeredAtMs: number;
  answeredBy?: string | null;
};

/** Stores the answer if the request is still pending; returns whether it was. */
export function answerHumanRequest(db: SmithersDb, answer: HumanAnswer): Promise<boolean> {
  return db.write("answerHumanRequest", (d) => answerHumanRequestIn(d, answer));
}

/** answerHumanRequest inside the caller's transaction. */
export function answerHumanRequestIn(d: Drizzle, answer: HumanAnswer): boolean {
  return (
    d
      .update(smithersHumanRequests)
      .set({
        status: "answered",
        responseJson: JSON.stringify(answer.response ?? null),
        answeredAtMs: answer.answeredAtMs,
        answeredBy: answer.answeredBy ?? null,
      })
      .where(and(eq(smithersHumanRequests.requestId, answer.requestId), pending))
      .returning({ requestId: smithersHumanRequests.requestId })
      .all().length > 0
  );
}

/** Cancels the request if it is still pending; returns whether it was. */
export function cancelHumanRequest(db: SmithersDb, requestId: string): Promise<boolean> {
  return db.write("cancelHumanRequest", (d) => cancelHumanRequestIn(d, requestId));
}

/** cancelHumanRequest inside the caller's transaction. */
export function cancelHumanRequestIn(d: Drizzle, requestId: string): boolean {
  return (
    d
      .update(smithersHumanRequests)
      .set({ status: "cancelled" })
      .where(and(eq(smithersHumanRequests.requestId, requestId), pending))
      .returning({ requestId: smithersHumanRequests.requestId })
      .all().length > 0
  );
}
