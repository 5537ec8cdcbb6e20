/**
 * `smithers inspect <run> [--json]`: a run at a glance: its status, workflow and input, each
 * task's state, attempts, time and last error, what it waits for (approvals, human answers,
 * signals, timers), and the tokens and cost its agents used.
 */
import { parseArgs } from "node:util";
import {
  attempts as attemptRows,
  frames,
  humanRequests,
  loadStoredInput,
  nodes as nodeRows,
  runs,
  WAITING_STATUSES,
  type SmithersDb,
  type UsageTotals,
} from "../db/index.ts";
import { pendingApprovals, planNodes, readFrame, type PendingApproval } from "../engine/index.ts";
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

/** A node waiting for a signal or a timer (an approval or a human answer is listed on its own too). */
type WaitReport = {
  nodeId: string;
  iteration: number;
  state: string;
  /** When its timer fires or its wait times out, if it does. */
  wakeAtMs: number | null;
  /** A signal wait: `{ event, correlationId, schema }` as stored. */
  wait: unknown;
};

type HumanRequestReport = {
  requestId: string;
  nodeId: string;
  iteration: number;
  kind: string;
  prompt: string;
  requestedAtMs: number;
  timeoutAtMs: number | null;
};

/** What `inspect` and `ps` both show of a run: its row's identity and times. */
export type RunHeader = Pick<
  runs.RunRow,
  "runId" | "status" | "workflowName" | "workflowPath" | "parentRunId" | "createdAtMs" | "startedAtMs" | "finishedAtMs"
>;

export function runHeader(r: runs.RunRow): RunHeader {
  const { runId, status, workflowName, workflowPath, parentRunId, createdAtMs, startedAtMs, finishedAtMs } = r;
  return { runId, status, workflowName, workflowPath, parentRunId, createdAtMs, startedAtMs, finishedAtMs };
}

export type InspectReport = RunHeader & {
  error: { code?: string; message?: string } | null;
  budget: { maxCostUsd?: number; maxTokens?: number } | null;
  /** The run's input as stored (fields of the `input` row), null when it stored none. */
  input: Record<string, unknown> | null;
  usage: UsageTotals;
  nodes: NodeReport[];
  pendingApprovals: PendingApproval[];
  pendingHumanRequests: HumanRequestReport[];
  waits: WaitReport[];
};

function parseJson<T>(text: string | null): T | null {
  if (text === null) return null;
  try {
    return JSON.parse(text) as T;
  } catch {
    return null;
  }
}

/**
 * The nodes in the order the workflow declares them (their place in the run's latest frame), each
 * node's iterations in order; nodes the frame no longer holds come last, as stored. A run without
 * frames, or whose frame cannot be rebuilt, keeps the stored order.
 */
async function inPlanOrder(db: SmithersDb, runId: string, nodes: NodeReport[]): Promise<NodeReport[]> {
  const last = await frames.lastFrameNo(db, runId);
  if (last < 0) return nodes;
  let place: Map<string, number>;
  try {
    place = new Map();
    for (const [i, n] of planNodes(await readFrame(db, runId, last)).entries()) if (!place.has(n.id)) place.set(n.id, i);
  } catch {
    return nodes;
  }
  const rank = (n: NodeReport) => place.get(n.nodeId) ?? Number.MAX_SAFE_INTEGER;
  return nodes.toSorted((a, b) => rank(a) - rank(b) || a.iteration - b.iteration);
}

/** Everything `inspect` shows: the run's row, its nodes and attempts, and its usage totals. */
export async function inspectRun(db: SmithersDb, runId: string): Promise<InspectReport> {
  const run = await runs.getRun(db, runId);
  if (!run) throw new SmithersError("RUN_NOT_FOUND", `No run "${runId}" in ${db.path}`, { runId });
  const [nodes, attempts, usage, input, approvals, humans] = await Promise.all([
    nodeRows.listNodes(db, runId),
    attemptRows.listAttempts(db, runId),
    db.read("sumRunUsage", (d) => attemptRows.sumRunUsage(d, runId)),
    loadStoredInput(db, runId),
    pendingApprovals(db, runId),
    humanRequests.listHumanRequestsForRun(db, runId),
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
    ...runHeader(run),
    error: error ? { code: error.code, message: error.message } : null,
    budget: parseJson<{ budget?: InspectReport["budget"] }>(run.configJson)?.budget ?? null,
    input: input ?? null,
    usage,
    nodes: await inPlanOrder(db, runId, [...byNode.values()]),
    pendingApprovals: approvals,
    pendingHumanRequests: humans
      .filter((h) => h.status === "pending")
      .map((h) => ({
        requestId: h.requestId,
        nodeId: h.nodeId,
        iteration: h.iteration,
        kind: h.kind,
        prompt: h.prompt,
        requestedAtMs: h.requestedAtMs,
        timeoutAtMs: h.timeoutAtMs,
      })),
    waits: nodes
      .filter((n) => (WAITING_STATUSES as readonly string[]).includes(n.state))
      .map((n) => ({ nodeId: n.nodeId, iteration: n.iteration, state: n.state, wakeAtMs: n.wakeAtMs, wait: parseJson(n.waitJson) })),
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
