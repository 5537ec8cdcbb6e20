/**
 * `smithers inspect <run> [--json]`: a run at a glance: its status and workflow, each task's
 * state, attempts, time and last error, and the tokens and cost its agents used.
 */
import { parseArgs } from "node:util";
import { attempts as attemptRows, nodes as nodeRows, runs, type SmithersDb, type UsageTotals } from "../db/index.ts";
import { SmithersError } from "../errors/index.ts";
import { addToTotals, NO_USAGE } from "../engine/budget.ts";
import { formatUsage } from "./progress.ts";
import { EXIT, openExistingDb, usageError, type Io } from "./shared.ts";

type NodeReport = {
  nodeId: string;
  iteration: number;
  state: string;
  attempts: number;
  /** Time spent in its attempts, in ms (finished ones). */
  durationMs: number;
  error: { code?: string; message?: string } | null;
  usage: UsageTotals | null;
};

export type InspectReport = {
  runId: string;
  status: string;
  workflowName: string;
  workflowPath: string | null;
  parentRunId: string | null;
  createdAtMs: number;
  startedAtMs: number | null;
  finishedAtMs: number | null;
  error: { code?: string; message?: string } | null;
  budget: { maxCostUsd?: number; maxTokens?: number } | null;
  usage: UsageTotals;
  nodes: NodeReport[];
};

function parseJson<T>(text: string | null): T | null {
  if (text === null) return null;
  try {
    return JSON.parse(text) as T;
  } catch {
    return null;
  }
}

/** Everything `inspect` shows: the run's row, its nodes and attempts, and its usage totals. */
export async function inspectRun(db: SmithersDb, runId: string): Promise<InspectReport> {
  const run = await runs.getRun(db, runId);
  if (!run) throw new SmithersError("RUN_NOT_FOUND", `No run "${runId}" in ${db.path}`, { runId });
  const [nodes, attempts, usage] = await Promise.all([
    nodeRows.listNodes(db, runId),
    attemptRows.listAttempts(db, runId),
    db.read("sumRunUsage", (d) => attemptRows.sumRunUsage(d, runId)),
  ]);
  const byNode = new Map<string, NodeReport>();
  for (const n of nodes) {
    const error = parseJson<{ code?: string; message?: string }>(n.errorJson);
    byNode.set(`${n.nodeId}#${n.iteration}`, {
      nodeId: n.nodeId,
      iteration: n.iteration,
      state: n.state,
      attempts: 0,
      durationMs: 0,
      error: error ? { code: error.code, message: error.message } : null,
      usage: null,
    });
  }
  for (const a of attempts) {
    const node = byNode.get(`${a.nodeId}#${a.iteration}`);
    if (!node) continue;
    node.attempts++;
    if (a.finishedAtMs !== null) node.durationMs += a.finishedAtMs - a.startedAtMs;
    if (a.inputTokens !== null || a.outputTokens !== null || a.costUsd !== null) node.usage = addToTotals(node.usage ?? NO_USAGE, a);
  }
  const error = parseJson<{ code?: string; message?: string }>(run.errorJson);
  return {
    runId: run.runId,
    status: run.status,
    workflowName: run.workflowName,
    workflowPath: run.workflowPath,
    parentRunId: run.parentRunId,
    createdAtMs: run.createdAtMs,
    startedAtMs: run.startedAtMs,
    finishedAtMs: run.finishedAtMs,
    error: error ? { code: error.code, message: error.message } : null,
    budget: parseJson<{ budget?: InspectReport["budget"] }>(run.configJson)?.budget ?? null,
    usage,
    nodes: [...byNode.values()],
  };
}

function text(report: InspectReport): string[] {
  const lines = [`run ${report.runId}: ${report.status}`, `workflow ${report.workflowName}${report.workflowPath ? ` (${report.workflowPath})` : ""}`];
  if (report.startedAtMs !== null) {
    const end = report.finishedAtMs ?? Date.now();
    lines.push(
      `started ${new Date(report.startedAtMs).toISOString()}, ${report.finishedAtMs === null ? "running for" : "took"} ${end - report.startedAtMs} ms`,
    );
  }
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
