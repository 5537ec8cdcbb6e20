/**
 * `_smithers_human_requests`: form fills, confirmations and prompts waiting for a person.
 * A request is `pending` until it is answered, cancelled or expired; each of those transitions
 * is guarded by `status = 'pending'`, so at most one of them ever wins.
 */
import type { InferInsertModel, InferSelectModel } from "drizzle-orm";
import { and, asc, eq, isNotNull, lte } from "drizzle-orm/sql";
import { getTableColumns } from "drizzle-orm/utils";
import { smithersHumanRequests, smithersNodes, smithersRuns } from "../internal-schema.ts";
import type { Sql } from "../sql.ts";
import type { SmithersDb } from "../store.ts";
import { immediate } from "./shared.ts";

export type HumanRequestRow = InferSelectModel<typeof smithersHumanRequests>;
export type NewHumanRequest = Omit<InferInsertModel<typeof smithersHumanRequests>, "status" | "responseJson" | "answeredAtMs" | "answeredBy">;

/** A pending request with the context an inbox shows next to it. */
export type PendingHumanRequest = HumanRequestRow & {
  workflowName: string | null;
  runStatus: string | null;
  nodeLabel: string | null;
};

const pending = () => eq(smithersHumanRequests.status, "pending");

/** createHumanRequest inside the caller's transaction (the engine's step); an existing id is kept, a withdrawn one reopened. */
export async function createHumanRequestIn(q: Sql, request: NewHumanRequest): Promise<void> {
  // Withdrawn by the engine (see HUMAN_REQUEST_STATUSES): the node waits again (a resumed run), so it is asked again.
  await q.orm
    .update(smithersHumanRequests)
    .set({ status: "pending", prompt: request.prompt, requestedAtMs: request.requestedAtMs, timeoutAtMs: request.timeoutAtMs ?? null })
    .where(and(eq(smithersHumanRequests.requestId, request.requestId), eq(smithersHumanRequests.status, "withdrawn")))
    .run();
  await q.orm
    .insert(smithersHumanRequests)
    .values({ ...request, status: "pending" })
    .onConflictDoNothing()
    .run();
}

/** A run's requests (any state) inside the caller's transaction, oldest first. */
export async function readHumanRequests(q: Sql, runId: string): Promise<HumanRequestRow[]> {
  return await q.orm
    .select()
    .from(smithersHumanRequests)
    .where(eq(smithersHumanRequests.runId, runId))
    .orderBy(asc(smithersHumanRequests.requestedAtMs), asc(smithersHumanRequests.requestId))
    .all();
}

/**
 * Moves the pending requests of one node (with `nodeId`), or of the whole run, to `withdrawn`: the
 * engine no longer waits for them (see HUMAN_REQUEST_STATUSES). Inside the caller's transaction.
 */
export async function withdrawRequestsIn(q: Sql, key: { runId: string; nodeId?: string; iteration?: number }): Promise<void> {
  const which =
    key.nodeId === undefined
      ? eq(smithersHumanRequests.runId, key.runId)
      : and(eq(smithersHumanRequests.runId, key.runId), eq(smithersHumanRequests.nodeId, key.nodeId), eq(smithersHumanRequests.iteration, key.iteration ?? 0));
  await q.orm.update(smithersHumanRequests).set({ status: "withdrawn" }).where(and(which, pending())).run();
}

/** Moves a node's pending requests to `expired` (the node timed out), inside the caller's transaction. */
export async function expireNodeRequestsIn(q: Sql, node: { runId: string; nodeId: string; iteration: number }): Promise<void> {
  await q.orm
    .update(smithersHumanRequests)
    .set({ status: "expired" })
    .where(
      and(
        eq(smithersHumanRequests.runId, node.runId),
        eq(smithersHumanRequests.nodeId, node.nodeId),
        eq(smithersHumanRequests.iteration, node.iteration),
        pending(),
      ),
    )
    .run();
}

/** Records a new request in `pending` state. */
export function createHumanRequest(db: SmithersDb, request: NewHumanRequest): Promise<void> {
  return db.write("createHumanRequest", async (q) => {
    await q.orm
      .insert(smithersHumanRequests)
      .values({ ...request, status: "pending" })
      .run();
  });
}

export function getHumanRequest(db: SmithersDb, requestId: string): Promise<HumanRequestRow | undefined> {
  return db.read("getHumanRequest", (q) => readHumanRequest(q, requestId));
}

/** getHumanRequest inside the caller's transaction. */
export async function readHumanRequest(q: Sql, requestId: string): Promise<HumanRequestRow | undefined> {
  return await q.orm.select().from(smithersHumanRequests).where(eq(smithersHumanRequests.requestId, requestId)).get();
}

/** Every request of a run (any state), oldest first. */
export function listHumanRequestsForRun(db: SmithersDb, runId: string): Promise<HumanRequestRow[]> {
  return db.read("listHumanRequestsForRun", (q) =>
    q.orm
      .select()
      .from(smithersHumanRequests)
      .where(eq(smithersHumanRequests.runId, runId))
      .orderBy(asc(smithersHumanRequests.requestedAtMs), asc(smithersHumanRequests.requestId))
      .all(),
  );
}

async function expireOverdue(q: Sql, nowMs: number): Promise<number> {
  return (
    await q.orm
      .update(smithersHumanRequests)
      .set({ status: "expired" })
      .where(and(pending(), isNotNull(smithersHumanRequests.timeoutAtMs), lte(smithersHumanRequests.timeoutAtMs, nowMs)))
      .returning({ requestId: smithersHumanRequests.requestId })
      .all()
  ).length;
}

/** Moves pending requests whose timeout has passed to `expired`; returns how many moved. */
export function expireHumanRequests(db: SmithersDb, nowMs: number): Promise<number> {
  return db.write("expireHumanRequests", (q) => expireOverdue(q, nowMs));
}

/**
 * The inbox: all pending requests across runs, oldest first, with workflow name, run status and
 * node label. Overdue requests are expired first, in the same transaction, so none is shown.
 * @example
 * for (const r of await listPendingHumanRequests(db, Date.now())) console.log(r.workflowName, r.prompt);
 */
export function listPendingHumanRequests(db: SmithersDb, nowMs: number): Promise<PendingHumanRequest[]> {
  return immediate(db, "listPendingHumanRequests", async (q) => {
    await expireOverdue(q, nowMs);
    return await readPendingWithRuns(q);
  });
}

/** Pending requests, oldest first, with workflow name, run status and node label (nothing expired here). */
export async function readPendingWithRuns(q: Sql): Promise<PendingHumanRequest[]> {
  return await q.orm
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
    .where(pending())
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
  return db.write("answerHumanRequest", (q) => answerHumanRequestIn(q, answer));
}

/** answerHumanRequest inside the caller's transaction. */
export async function answerHumanRequestIn(q: Sql, answer: HumanAnswer): Promise<boolean> {
  return (
    (
      await q.orm
        .update(smithersHumanRequests)
        .set({
          status: "answered",
          responseJson: JSON.stringify(answer.response ?? null),
          answeredAtMs: answer.answeredAtMs,
          answeredBy: answer.answeredBy ?? null,
        })
        .where(and(eq(smithersHumanRequests.requestId, answer.requestId), pending()))
        .returning({ requestId: smithersHumanRequests.requestId })
        .all()
    ).length > 0
  );
}

/** Cancels the request if it is still pending; returns whether it was. */
export function cancelHumanRequest(db: SmithersDb, requestId: string): Promise<boolean> {
  return db.write("cancelHumanRequest", (q) => cancelHumanRequestIn(q, requestId));
}

/** cancelHumanRequest inside the caller's transaction. */
export async function cancelHumanRequestIn(q: Sql, requestId: string): Promise<boolean> {
  return (
    (
      await q.orm
        .update(smithersHumanRequests)
        .set({ status: "cancelled" })
        .where(and(eq(smithersHumanRequests.requestId, requestId), pending()))
        .returning({ requestId: smithersHumanRequests.requestId })
        .all()
    ).length > 0
  );
}
