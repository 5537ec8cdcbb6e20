/** The runs list read model: `smithers ps --json`, GET /runs and the dashboard's runs list. */
import type { RunHeader, RunListItem, RunSummary } from "../../contract/index.ts";
import { attempts, events, nodes, queue, runs, type SmithersDb } from "../../db/index.ts";
import { isOver, RESUME_EVENTS } from "../core/index.ts";

/** What every view of a run shows of it, from its row. */
export function runHeader(r: runs.RunRow): RunHeader {
  const { runId, status, workflowName, workflowPath, parentRunId, createdAtMs, startedAtMs, finishedAtMs } = r;
  return { runId, status, workflowName, workflowPath, parentRunId, createdAtMs, startedAtMs, finishedAtMs };
}

/** A request queued for workers (up --detach, enqueue, serve) that no worker has started yet, as a run summary. */
export function queuedSummary(q: queue.QueueRow): RunSummary {
  const { runId, workflowName, workflowPath, enqueuedAtMs } = q;
  const header = { runId, status: "queued", workflowName, workflowPath, parentRunId: null, createdAtMs: enqueuedAtMs, startedAtMs: null, finishedAtMs: null };
  return {
    ...header,
    durationMs: null,
    progress: { done: 0, failed: 0, total: 0 },
    costUsd: null,
    usage: { ...attempts.NO_USAGE },
    resumeFailure: null,
    queue: { priority: Number(q.priority), tenant: q.tenant === "" ? null : q.tenant, notBeforeMs: q.notBeforeMs, debounceKey: q.debounceKey },
  };
}

/**
 * The runs, newest first, as `ps --json` prints them; with `withQueued`, the requests queued for
 * workers first (status `queued`, filtered by status and workflow name like the runs).
 */
export async function listRunSummaries(
  db: SmithersDb,
  options: { status?: string; workflow?: string; limit: number; withQueued?: boolean },
  nowMs = Date.now(),
): Promise<RunSummary[]> {
  const { withQueued, ...filter } = options;
  const wantsQueued = withQueued === true && (filter.status === undefined || filter.status === "queued");
  const queued = wantsQueued ? (await queue.listWaiting(db, { workflowName: filter.workflow, limit: filter.limit })).map(queuedSummary) : [];
  if (filter.status === "queued") return queued;
  const rows = filter.limit > queued.length ? await runs.listRecentRuns(db, { ...filter, limit: filter.limit - queued.length }) : [];
  const progress = await nodes.countNodeProgress(
    db,
    rows.map((r) => r.runId),
  );
  const usage = await db.read("psUsage", (q) =>
    attempts.sumUsageByRun(
      q,
      rows.map((r) => r.runId),
    ),
  );
  const resumes = await events.latestEventsOf(
    db,
    rows.filter((r) => !isOver(r.status)).map((r) => r.runId),
    RESUME_EVENTS,
  );
  const resumeFailure = (runId: string): RunSummary["resumeFailure"] => {
    const last = resumes.get(runId);
    if (last?.type !== "RunResumeFailed") return null;
    const { reason, by } = JSON.parse(last.payloadJson) as { reason: string; by: string };
    return { reason, by, atMs: last.timestampMs };
  };
  return [
    ...queued,
    ...rows.map((r) => ({
      ...runHeader(r),
      durationMs: r.startedAtMs === null ? null : (r.finishedAtMs ?? nowMs) - r.startedAtMs,
      progress: progress.get(r.runId) ?? { done: 0, failed: 0, total: 0 },
      costUsd: usage.get(r.runId)?.costUsd ?? null,
      usage: usage.get(r.runId) ?? { ...attempts.NO_USAGE },
      resumeFailure: resumeFailure(r.runId),
    })),
  ];
}

/** GET /runs's list: queued requests first, then the stored runs' summaries, newest first, with `workflow` named as in the rest of the API. */
export async function listRunItems(db: SmithersDb, o: { status?: string; workflow?: string; limit?: number }): Promise<RunListItem[]> {
  const { status, workflow, limit = 100 } = o;
  const items = await listRunSummaries(db, { ...(status ? { status } : {}), ...(workflow ? { workflow } : {}), limit, withQueued: true });
  return items.map((r) => ({ ...r, workflow: r.workflowName }));
}
