/** The `inspect` read model: a run at a glance (`smithers inspect --json`, GET /runs/:id, the dashboard's run page). */
import type { InspectReport, NodeReport } from "../../contract/index.ts";
import { attempts as attemptRows, frames, humanRequests, loadStoredInput, nodes as nodeRows, runs, WAITING_STATUSES, type SmithersDb } from "../../db/index.ts";
import { SmithersError } from "../../errors/index.ts";
import { addToTotals, NO_USAGE } from "../core/index.ts";
import { failedAttemptsByNode } from "./attempt-failures.ts";
import { runSlots } from "./limits.ts";
import { runHeader } from "./runs.ts";

/**
 * The waits and history rooms, loaded by the first inspect: they bring the JSX renderer, the frame
 * codec and the tools with them, which a process that only lists runs (`smithers ps`) never needs.
 */
const waitsRoom = () => import("../waits/index.ts");
const historyRoom = () => import("../history/index.ts");

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
  const { frameNodes, readFrame } = await historyRoom();
  let place: Map<string, number>;
  try {
    place = new Map();
    for (const [i, n] of frameNodes(await readFrame(db, runId, last)).entries()) if (!place.has(n.id)) place.set(n.id, i);
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
  const { pendingApprovals } = await waitsRoom();
  const [nodes, attempts, usage, input, approvals, humans, slots] = await Promise.all([
    nodeRows.listNodes(db, runId),
    attemptRows.listAttempts(db, runId),
    db.read("sumRunUsage", (d) => attemptRows.sumRunUsage(d, runId)),
    loadStoredInput(db, runId),
    pendingApprovals(db, runId),
    humanRequests.listHumanRequestsForRun(db, runId),
    runSlots(db, runId),
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
      failedAttempts: [],
    });
  }
  for (const a of attempts) {
    const node = byNode.get(`${a.nodeId}#${a.iteration}`);
    if (!node) continue;
    node.attempts++;
    if (a.finishedAtMs !== null) node.durationMs += a.finishedAtMs - a.startedAtMs;
    if (a.inputTokens !== null || a.outputTokens !== null || a.costUsd !== null) node.usage = addToTotals(node.usage ?? NO_USAGE, a);
  }
  for (const [key, failed] of failedAttemptsByNode(attempts)) {
    const node = byNode.get(key);
    if (node) node.failedAttempts = failed;
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
    slots,
  };
}
