/**
 * `smithers inspect <run> [--json]`: a run at a glance: its status, workflow and input, each
 * task's state, attempts, time, last error and output row, what it waits for (approvals, human
 * answers, signals, timers), and the tokens and cost its agents used.
 */
import { parseArgs } from "./parse-args.ts";
import type { InspectReport } from "../contract/index.ts";
import { loadStoredOutputs, nodes as nodeRows, type SmithersDb } from "../db/index.ts";
import { inspectRun } from "../engine/queries/index.ts";
import { failedAttemptLines } from "./inspect-failures.ts";
import { formatUsage } from "./progress.ts";
import { EXIT, openExistingDb, usageError, type Io } from "./shared.ts";

/** A task's output row (its fields, without run, node and iteration), by `nodeId#iteration`. */
type Outputs = Map<string, Record<string, unknown>>;

/** Longest output line of the human view; --json has the whole row. */
const OUTPUT_CHARS = 200;

/**
 * Each task's output row as stored, read without loading the workflow (an operator's view: a
 * boolean column reads as SQLite keeps it, 0 or 1).
 */
async function taskOutputs(db: SmithersDb, runId: string): Promise<Outputs> {
  const keys = (await nodeRows.listNodes(db, runId)).filter((n) => n.outputTable);
  return loadStoredOutputs(db, runId, keys);
}

/** A row as compact JSON, cut at OUTPUT_CHARS (the human views of inspect and eval compare). */
export function compactRow(row: Record<string, unknown>): string {
  const json = JSON.stringify(row);
  return json.length > OUTPUT_CHARS ? `${json.slice(0, OUTPUT_CHARS - 1)}… (--json for all of it)` : json;
}

/** `    output {"label":"x","order":1}`, cut at OUTPUT_CHARS; nothing for a task with no row. */
function outputLine(row: Record<string, unknown> | undefined): string[] {
  return row === undefined ? [] : [`    output ${compactRow(row)}`];
}

function text(report: InspectReport, outputs: Outputs): string[] {
  const lines = [`run ${report.runId}: ${report.status}`, `workflow ${report.workflowName}${report.workflowPath ? ` (${report.workflowPath})` : ""}`];
  if (report.startedAtMs !== null) {
    const end = report.finishedAtMs ?? Date.now();
    lines.push(
      `started ${new Date(report.startedAtMs).toISOString()}, ${report.finishedAtMs === null ? "running for" : "took"} ${end - report.startedAtMs} ms`,
    );
  }
  if (report.input) lines.push(`input ${JSON.stringify(report.input)}`);
  if (report.error) lines.push(`error ${report.error.code ?? ""}: ${report.error.message ?? ""}`);
  lines.push(formatUsage(report.usage));
  if (report.budget) {
    const limits = [
      report.budget.maxCostUsd === undefined ? null : `$${report.budget.maxCostUsd}`,
      report.budget.maxTokens === undefined ? null : `${report.budget.maxTokens} tokens`,
    ];
    lines.push(`limits ${limits.filter(Boolean).join(", ")}`);
  }
  lines.push("tasks:");
  for (const n of report.nodes) {
    const usage = n.usage ? `, ${n.usage.inputTokens + n.usage.outputTokens} tokens${n.usage.costUsd === null ? "" : `, $${n.usage.costUsd.toFixed(4)}`}` : "";
    const error = n.error ? ` (${n.error.code ?? ""}: ${n.error.message ?? ""})` : "";
    lines.push(`  ${n.nodeId} iter=${n.iteration} ${n.state}, ${n.attempts} attempt(s), ${n.durationMs} ms${usage}${error}`);
    lines.push(...outputLine(outputs.get(`${n.nodeId}#${n.iteration}`)));
  }
  lines.push(...failedAttemptLines(report));
  if (report.pendingApprovals.length > 0) lines.push("pending approvals:");
  for (const a of report.pendingApprovals) {
    lines.push(
      `  ${a.nodeId} iter=${a.iteration}${a.runId === report.runId ? "" : ` (child run ${a.runId})`}: ${a.request.title ?? ""} (smithers approve ${a.runId} --node ${a.nodeId})`,
    );
  }
  if (report.pendingHumanRequests.length > 0) lines.push("pending human requests:");
  for (const h of report.pendingHumanRequests) lines.push(`  ${h.requestId} (${h.nodeId} iter=${h.iteration}, ${h.kind}): ${h.prompt}`);
  if (report.waits.length > 0) lines.push("waits:");
  for (const w of report.waits) {
    const { event, concurrencyKey } = (w.wait as { event?: string; concurrencyKey?: string } | null) ?? {};
    const until = w.wakeAtMs === null ? "" : ` until ${new Date(w.wakeAtMs).toISOString()}`;
    const what = event ? ` for signal "${event}"` : concurrencyKey ? ` for key "${concurrencyKey}"` : "";
    lines.push(`  ${w.nodeId} iter=${w.iteration} ${w.state}${what}${until}`);
  }
  if (report.slots.length > 0) lines.push("slots:");
  for (const s of report.slots) lines.push(`  ${s.key}: ${s.held} held, ${s.waiting} waiting`);
  return lines;
}

export async function inspectCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { json: { type: "boolean" }, db: { type: "string" } } });
  const runId = positionals[0];
  if (!runId || positionals.length > 1) throw usageError("inspect takes exactly one run id");
  const db = openExistingDb(values.db);
  try {
    const report = await inspectRun(db, runId);
    const outputs = await taskOutputs(db, runId);
    if (values.json) {
      // Each task with its output row (null when it has none yet), as the human view shows it.
      const nodes = report.nodes.map((n) => ({ ...n, output: outputs.get(`${n.nodeId}#${n.iteration}`) ?? null }));
      io.out(JSON.stringify({ ...report, nodes }, null, 2));
    } else for (const line of text(report, outputs)) io.out(line);
    return EXIT.ok;
  } finally {
    await db.close();
  }
}
