/** The inbox read model: what waits for a person across runs (GET /inbox, the dashboard's inbox). */
import type { InboxApproval } from "../../contract/index.ts";
import { approvals, runs, type SmithersDb } from "../../db/index.ts";
import { isOver } from "../core/index.ts";

/** Every approval still requested in a run that has not ended, by run, node and iteration. */
export async function pendingApprovalsAcrossRuns(db: SmithersDb): Promise<InboxApproval[]> {
  // Loaded here, not at import: the waits room brings the JSX renderer, which listing runs never needs.
  const { requestOf } = await import("../waits/index.ts");
  const rows = await approvals.listApprovals(db, { status: "requested" });
  const runRows = new Map<string, runs.RunRow | undefined>();
  const out: InboxApproval[] = [];
  for (const row of rows) {
    if (!runRows.has(row.runId)) runRows.set(row.runId, await runs.getRun(db, row.runId));
    const run = runRows.get(row.runId);
    if (!run || isOver(run.status)) continue; // a cancelled or failed run's gate can no longer be decided usefully
    out.push({
      runId: row.runId,
      workflowName: run.workflowName,
      runStatus: run.status,
      nodeId: row.nodeId,
      iteration: row.iteration,
      requestedAtMs: row.requestedAtMs,
      request: requestOf(row),
    });
  }
  return out;
}
