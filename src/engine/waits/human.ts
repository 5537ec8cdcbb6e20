/**
 * `<HumanTask>` requests from outside the run: the inbox (`smithers human list`), answering
 * (`smithers human answer`, checked against the stored schema before anything is written) and
 * cancelling. An answer makes the waiting run due, so the daemon resumes it.
 */
import type { InboxHuman, JsonSchema } from "../../contract/index.ts";
import { humanRequests, runs, type SmithersDb } from "../../db/index.ts";
import { SmithersError } from "../../errors/index.ts";
import { fieldIssues, formatZodIssues, jsonSchemaIssues } from "../../schema/index.ts";

/** The request id of ask number `ask` (1, 2, … when answers failed the schema) of a human task. */
export const humanRequestId = (runId: string, nodeId: string, iteration: number, ask: number) => `${runId}:${nodeId}:${iteration}:${ask}`;

/** The ask number at the end of a request id made by humanRequestId (0 for any other id). */
export const humanAsk = (requestId: string): number => Number(requestId.slice(requestId.lastIndexOf(":") + 1)) || 0;

/** Human requests in ask order (1, 2, … 10: by number, not as text). */
export const byAsk = <R extends { requestId: string }>(rows: R[]): R[] => [...rows].sort((a, b) => humanAsk(a.requestId) - humanAsk(b.requestId));

/** An open human request as the inbox lists it (the contract's InboxHuman). */
export type InboxItem = InboxHuman;

/**
 * Every request still open, oldest first, with its run's workflow and status; one whose timeout
 * passed is listed `expired` (and can no longer be answered).
 * @example
 * for (const item of await humanInbox(db)) console.log(item.requestId, item.prompt);
 */
export async function humanInbox(db: SmithersDb, now: () => number = Date.now): Promise<InboxItem[]> {
  const nowMs = now();
  const rows = await db.read("humanInbox", async (q) => await humanRequests.readPendingWithRuns(q));
  return rows.map((r) => ({
    requestId: r.requestId,
    runId: r.runId,
    workflowName: r.workflowName,
    runStatus: r.runStatus,
    nodeId: r.nodeId,
    iteration: r.iteration,
    prompt: r.prompt,
    requestedAtMs: r.requestedAtMs,
    ageMs: Math.max(0, nowMs - r.requestedAtMs),
    timeoutAtMs: r.timeoutAtMs,
    expired: r.timeoutAtMs !== null && r.timeoutAtMs <= nowMs,
    schema: r.schemaJson ? (JSON.parse(r.schemaJson) as JsonSchema) : null,
  }));
}

export type AnswerOptions = { requestId: string; data: unknown; by?: string; now?: () => number };

/** The request `requestId` if it can still be answered or cancelled; the error that says why not otherwise. */
function openRequest(row: humanRequests.HumanRequestRow | undefined, requestId: string, nowMs: number): humanRequests.HumanRequestRow {
  if (!row) throw new SmithersError("HUMAN_REQUEST_NOT_FOUND", `No human request "${requestId}"`, { requestId });
  if (row.status !== "pending") {
    throw new SmithersError("HUMAN_REQUEST_CLOSED", `Human request "${requestId}" was already ${row.status}`, { requestId, status: row.status });
  }
  if (row.timeoutAtMs !== null && row.timeoutAtMs <= nowMs) {
    throw new SmithersError("HUMAN_REQUEST_CLOSED", `Human request "${requestId}" expired at ${new Date(row.timeoutAtMs).toISOString()}`, {
      requestId,
      status: "expired",
    });
  }
  return row;
}

/**
 * Answers a pending request once. HUMAN_REQUEST_NOT_FOUND, HUMAN_REQUEST_CLOSED (answered,
 * cancelled or expired), or HUMAN_ANSWER_INVALID with each field's problem; nothing is written then.
 * @example
 * await answerHuman(db, { requestId, data: { approved: true, comments: "ship it" }, by: "ada" });
 */
export function answerHuman(db: SmithersDb, o: AnswerOptions): Promise<{ requestId: string; runId: string }> {
  const nowMs = (o.now ?? Date.now)();
  return db.withTransaction("answerHuman", async (q) => {
    const row = openRequest(await humanRequests.readHumanRequest(q, o.requestId), o.requestId, nowMs);
    const issues = row.schemaJson ? jsonSchemaIssues(JSON.parse(row.schemaJson), o.data) : undefined;
    if (issues) {
      const problems = formatZodIssues(issues);
      throw new SmithersError("HUMAN_ANSWER_INVALID", `The answer does not match what "${row.nodeId}" asks for:\n${problems}`, {
        requestId: o.requestId,
        issues: problems,
        // Each problem at its field's path, for a form to show beside the field.
        fields: fieldIssues(issues),
      });
    }
    await humanRequests.answerHumanRequestIn(q, { requestId: o.requestId, response: o.data, answeredAtMs: nowMs, answeredBy: o.by ?? null });
    await runs.markRunDue(q, row.runId, nowMs);
    return { requestId: o.requestId, runId: row.runId };
  });
}

/** Cancels a pending request: its node fails with HUMAN_TASK_CANCELLED when the run continues. */
export function cancelHuman(db: SmithersDb, o: { requestId: string; now?: () => number }): Promise<{ requestId: string; runId: string }> {
  const nowMs = (o.now ?? Date.now)();
  return db.withTransaction("cancelHuman", async (q) => {
    const row = openRequest(await humanRequests.readHumanRequest(q, o.requestId), o.requestId, nowMs);
    await humanRequests.cancelHumanRequestIn(q, o.requestId);
    await runs.markRunDue(q, row.runId, nowMs);
    return { requestId: o.requestId, runId: row.runId };
  });
}
