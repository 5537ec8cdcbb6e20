/** `smithers ps [--status S] [--limit N] [--json]`: the runs in a database, newest first, after the requests queued for workers. */
import { parseArgs } from "node:util";
import { attempts, events, nodes, queue, runs, type SmithersDb, type UsageTotals } from "../db/index.ts";
import { isOver, RESUME_EVENTS, RunStatusSchema } from "../engine/index.ts";
import { runHeader, type RunHeader } from "./inspect.ts";
import { EXIT, openExistingDb, positiveInt, usageError, type Io } from "./shared.ts";

/** One run as `ps --json` prints it (an array of these). */
export type RunSummary = RunHeader & {
  /** finishedAtMs (or now, for a run not ended) minus startedAtMs; null before it started. */
  durationMs: number | null;
  /** Tasks that ended (finished, skipped, failed, cancelled) and all tasks the run has recorded. */
  progress: { done: number; total: number };
  /** The cost its agents reported, in US dollars; null when none reported one. */
  costUsd: number | null;
  /** Tokens and cost its agents reported, summed over all attempts. */
  usage: UsageTotals;
  /**
   * For a run not ended: the last try to resume it failed (RunResumeFailed, not followed by a
   * resume that went ahead): why, which process tried, when. Null otherwise.
   */
  resumeFailure: { reason: string; by: string; atMs: number } | null;
};

export const PS_DEFAULT_LIMIT = 20;

/** A request queued for workers (up --detach, enqueue, serve) that no worker has started yet, as a run summary. */
export function queuedSummary(q: queue.QueueRow): RunSummary {
  const { runId, workflowName, workflowPath, enqueuedAtMs } = q;
  const header = { runId, status: "queued", workflowName, workflowPath, parentRunId: null, createdAtMs: enqueuedAtMs, startedAtMs: null, finishedAtMs: null };
  return { ...header, durationMs: null, progress: { done: 0, total: 0 }, costUsd: null, usage: { ...attempts.NO_USAGE }, resumeFailure: null };
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
      progress: progress.get(r.runId) ?? { done: 0, total: 0 },
      costUsd: usage.get(r.runId)?.costUsd ?? null,
      usage: usage.get(r.runId) ?? { ...attempts.NO_USAGE },
      resumeFailure: resumeFailure(r.runId),
    })),
  ];
}

const seconds = (ms: number | null) => (ms === null ? "-" : `${(ms / 1000).toFixed(1)}s`);

/** The runs as an aligned table, a header first. */
export function formatRunTable(list: readonly RunSummary[]): string[] {
  const rows = [
    ["RUN", "STATUS", "WORKFLOW", "STARTED", "DURATION", "PROGRESS", "COST"],
    ...list.map((r) => [
      r.runId,
      r.status,
      r.workflowName,
      r.startedAtMs === null ? "-" : new Date(r.startedAtMs).toISOString(),
      seconds(r.durationMs),
      `${r.progress.done}/${r.progress.total}`,
      r.costUsd === null ? "-" : `$${r.costUsd.toFixed(4)}`,
    ]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  const table = rows.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  "));
  // Below the table: why a run that should go on did not.
  const notes = list.flatMap((r) =>
    r.resumeFailure
      ? [`! ${r.runId}: resuming failed at ${new Date(r.resumeFailure.atMs).toISOString()} (${r.resumeFailure.by}): ${r.resumeFailure.reason}`]
      : [],
  );
  return [...table, ...notes];
}

export async function psCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { status: { type: "string" }, limit: { type: "string" }, json: { type: "boolean" }, db: { type: "string" } },
  });
  if (positionals.length > 0) throw usageError("ps takes no arguments");
  const status = values.status;
  if (status !== undefined && status !== "queued" && !RunStatusSchema.safeParse(status).success) {
    throw usageError(`--status must be one of queued, ${RunStatusSchema.options.join(", ")}, got "${status}"`);
  }
  const limit = positiveInt(values.limit, "--limit") ?? PS_DEFAULT_LIMIT;
  const db = openExistingDb(values.db);
  try {
    const list = await listRunSummaries(db, { status, limit, withQueued: true });
    if (values.json) io.out(JSON.stringify(list, null, 2));
    else if (list.length === 0) io.out(status === undefined ? "no runs" : `no ${status} runs`);
    else for (const line of formatRunTable(list)) io.out(line);
    return EXIT.ok;
  } finally {
    await db.close();
  }
}
