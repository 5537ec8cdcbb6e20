/**
 * Cancelling a run from outside the process that executes it (`smithers cancel`, the HTTP API).
 * A running run is asked: `cancel_requested_at_ms` is set, and its owner, which reads it with
 * every heartbeat, cancels (its attempts end `cancelled`, not lost); a run resumed while the
 * request stands is cancelled at once. A waiting run has no process: it is cancelled here, in one
 * transaction with its waiting nodes and its RunCancelled event.
 */
import { approvals, events, humanRequests, nodes, runs, WAITING_STATUSES, type SmithersDb, type Sql } from "../../db/index.ts";
import { SmithersError } from "../../errors/index.ts";
import { isOver, isWaiting } from "../core/index.ts";

export type CancelOutcome = { runId: string; status: "cancel-requested" | "cancelled" };

/**
 * Asks run `runId` to stop. RUN_NOT_FOUND for no such run, RUN_ENDED for one that already ended.
 * @example
 * await requestCancel(db, "r1"); // { runId: "r1", status: "cancel-requested" }
 */
export function requestCancel(db: SmithersDb, runId: string, nowMs: number = Date.now()): Promise<CancelOutcome> {
  return db.withTransaction("requestCancel", async (q) => {
    const run = await runs.readRun(q, runId);
    if (!run) throw new SmithersError("RUN_NOT_FOUND", `No run "${runId}" in ${db.path}`, { runId });
    if (isOver(run.status)) throw new SmithersError("RUN_ENDED", `Run "${runId}" already ended (${run.status})`, { runId, status: run.status });
    if (isWaiting(run.status)) {
      await cancelWaitingRunIn(q, runId, nowMs);
      return { runId, status: "cancelled" };
    }
    await runs.setRunFields(q, runId, { cancelRequestedAtMs: run.cancelRequestedAtMs ?? nowMs });
    return { runId, status: "cancel-requested" };
  });
}

/**
 * Cancels a run known to be waiting (no process runs it), inside the caller's transaction. Its open
 * gates and human requests are withdrawn with it: no inbox lists them, and a resume of the run asks again.
 */
async function cancelWaitingRunIn(q: Sql, runId: string, nowMs: number): Promise<void> {
  await nodes.resetNodes(q, runId, [...WAITING_STATUSES], "cancelled", nowMs);
  await approvals.withdrawApprovalsIn(q, { runId });
  await humanRequests.withdrawRequestsIn(q, { runId });
  await runs.setRunFields(q, runId, { status: "cancelled", finishedAtMs: nowMs, cancelRequestedAtMs: nowMs, wakeAtMs: null });
  await events.insertEventsIn(q, [{ runId, timestampMs: nowMs, type: "RunCancelled", payloadJson: JSON.stringify({ status: "cancelled" }) }], {
    dedupe: false,
  });
}

/**
 * Cancels the waiting child run of a `<Subflow>` node (the last run of its chain) and the waiting
 * runs below it, inside the caller's transaction: what a node cancelled while its child waits leaves
 * behind. A child that no longer waits (it ended, or a process runs it) is left alone.
 */
export async function cancelWaitingChildIn(q: Sql, childRunId: string, nowMs: number): Promise<void> {
  const child = await runs.readChainEnd(q, childRunId);
  if (!child || !isWaiting(child.status)) return;
  const below = (await runs.readDescendantRuns(q, child.runId)).filter((r) => isWaiting(r.status));
  for (const run of [child, ...below]) await cancelWaitingRunIn(q, run.runId, nowMs);
}
