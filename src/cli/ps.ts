/** `smithers ps [--status S] [--limit N] [--json]`: the runs in a database, newest first, after the requests queued for workers. */
import { parseArgs } from "./parse-args.ts";
import { progressText, type LimitUse, type QueuePlace, type RunSummary } from "../contract/index.ts";
import { RUN_STATUSES } from "../contract/index.ts";
import { limitUse, listRunSummaries } from "../engine/queries/index.ts";
import { EXIT, openExistingDb, positiveInt, usageError, type Io } from "./shared.ts";

export const PS_DEFAULT_LIMIT = 20;

const seconds = (ms: number | null) => (ms === null ? "-" : `${(ms / 1000).toFixed(1)}s`);

/** A queued run's place: `priority 5 tenant acme not-before <time> debounce <key>`, or `-` when it has none of them. */
function queueText(p: QueuePlace): string {
  const parts = [
    p.priority !== 0 ? `priority ${p.priority}` : "",
    p.tenant !== null ? `tenant ${p.tenant}` : "",
    p.notBeforeMs !== null ? `not-before ${new Date(p.notBeforeMs).toISOString()}` : "",
    p.debounceKey !== null ? `debounce ${p.debounceKey}` : "",
  ].filter(Boolean);
  return parts.length > 0 ? parts.join(" ") : "-";
}

/** The runs as an aligned table, a header first. */
export function formatRunTable(list: readonly RunSummary[]): string[] {
  // A QUEUE column only when a queued run is ordered by more than its age.
  const ordered = list.some((r) => r.queue && queueText(r.queue) !== "-");
  const rows = [
    ["RUN", "STATUS", "WORKFLOW", "STARTED", "DURATION", "PROGRESS", "COST", ...(ordered ? ["QUEUE"] : [])],
    ...list.map((r) => [
      r.runId,
      r.status,
      r.workflowName,
      r.startedAtMs === null ? "-" : new Date(r.startedAtMs).toISOString(),
      seconds(r.durationMs),
      progressText(r.progress),
      r.costUsd === null ? "-" : `$${r.costUsd.toFixed(4)}`,
      ...(ordered ? [r.queue ? queueText(r.queue) : "-"] : []),
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

/** Under the runs: each concurrency key in use, its slots held (of its limit) and the tasks waiting for one (`smithers limits` for all). */
export function slotLines(use: readonly LimitUse[]): string[] {
  return use
    .filter((u) => u.held > 0 || u.waiting > 0)
    .map((u) => `slots ${u.key}: ${u.held}${u.concurrency === null ? "" : `/${u.concurrency}`} held, ${u.waiting} waiting`);
}

export async function psCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { status: { type: "string" }, limit: { type: "string" }, json: { type: "boolean" }, db: { type: "string" } },
  });
  if (positionals.length > 0) throw usageError("ps takes no arguments");
  const status = values.status;
  if (status !== undefined && status !== "queued" && !(RUN_STATUSES as readonly string[]).includes(status)) {
    throw usageError(`--status must be one of queued, ${RUN_STATUSES.join(", ")}, got "${status}"`);
  }
  const limit = positiveInt(values.limit, "--limit") ?? PS_DEFAULT_LIMIT;
  const db = openExistingDb(values.db);
  try {
    const list = await listRunSummaries(db, { status, limit, withQueued: true });
    if (values.json) io.out(JSON.stringify(list, null, 2));
    else if (list.length === 0) io.out(status === undefined ? "no runs" : `no ${status} runs`);
    else for (const line of formatRunTable(list)) io.out(line);
    if (!values.json) for (const line of slotLines(await limitUse(db, Date.now()))) io.out(line);
    return EXIT.ok;
  } finally {
    await db.close();
  }
}
