/**
 * `smithers inspect <run> [--json]`: a run at a glance: its status, workflow and input, each
 * task's state, attempts, time and last error, what it waits for (approvals, human answers,
 * signals, timers), and the tokens and cost its agents used.
 */
import { parseArgs } from "node:util";
import type { InspectReport } from "../contract/index.ts";
import { inspectRun } from "../engine/index.ts";
import { failedAttemptLines } from "./inspect-failures.ts";
import { formatUsage } from "./progress.ts";
import { EXIT, openExistingDb, usageError, type Io } from "./shared.ts";

function text(report: InspectReport): string[] {
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
    const event = (w.wait as { event?: string } | null)?.event;
    const until = w.wakeAtMs === null ? "" : ` until ${new Date(w.wakeAtMs).toISOString()}`;
    lines.push(`  ${w.nodeId} iter=${w.iteration} ${w.state}${event ? ` for signal "${event}"` : ""}${until}`);
  }
  return lines;
}

export async function inspectCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { json: { type: "boolean" }, db: { type: "string" } } });
  const runId = positionals[0];
  if (!runId || positionals.length > 1) throw usageError("inspect takes exactly one run id");
  const db = openExistingDb(values.db);
  try {
    const report = await inspectRun(db, runId);
    if (values.json) io.out(JSON.stringify(report, null, 2));
    else for (const line of text(report)) io.out(line);
    return EXIT.ok;
  } finally {
    await db.close();
  }
}
