/**
 * Sending a signal to a run from outside it (`smithers signal`, sendSignal()). The signal is
 * stored with the next seq of the run; a node waiting for it takes it on the run's next step, or
 * when it mounts if it is not waiting yet. A run that already waits is made due, so the daemon
 * wakes it.
 */
import { nodes as nodeRows, runs, signals, type SmithersDb } from "../db/index.ts";
import { SmithersError } from "../errors/index.ts";
import { checkAgainstJsonSchema } from "../schema/index.ts";
import { isOver } from "./states.ts";

export type SendSignalOptions = {
  runId: string;
  /** The signal name: a `<WaitForEvent event>`, or a `<Signal>`'s id. */
  name: string;
  /** The payload, checked against the schema of a node waiting for it now. */
  data?: unknown;
  /** Only nodes waiting with this correlation id (or with none) take it. */
  correlationId?: string;
  /** Who sent it (stored as received_by). */
  by?: string;
  /** An idempotency key: sending again with the same key (a retry) stores nothing and returns the first signal's seq. */
  dedupeKey?: string;
  now?: () => number;
};

export type SentSignal = {
  runId: string;
  name: string;
  seq: number;
  /** The signal was stored before (same dedupeKey, or identical): this send changed nothing. */
  duplicate: boolean;
  /** Nodes waiting now that it matches (their schemas accepted it); empty when none waits yet. */
  waitingNodes: { nodeId: string; iteration: number }[];
};

type WaitJson = { event: string; correlationId: string | null; schema: unknown };

function waitOf(text: string | null): WaitJson | undefined {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as WaitJson;
  } catch {
    return undefined;
  }
}

/**
 * Stores a signal for a run (for the last run of its chain when it continued as new: see
 * `<ContinueAsNew>`). RUN_NOT_FOUND for an unknown run, RUN_ENDED for one that finished,
 * failed or was cancelled, SIGNAL_INVALID (field by field) when the payload fails the schema of
 * a node waiting for it; in each case nothing is stored.
 * @example
 * await sendSignal(db, { runId, name: "deploy.completed", data: { version: "1.2.3" }, correlationId: "d-42" });
 */
export function sendSignal(db: SmithersDb, o: SendSignalOptions): Promise<SentSignal> {
  if (typeof o.name !== "string" || o.name === "") throw new SmithersError("USAGE", "A signal needs a name");
  const data = o.data === undefined ? null : o.data;
  const payloadJson = JSON.stringify(data);
  const nowMs = (o.now ?? Date.now)();
  return db.withTransaction("sendSignal", async (q) => {
    // A run that continued as new hands its signals to the run carrying on.
    const end = await runs.readChainEnd(q, o.runId);
    if (!end) throw new SmithersError("RUN_NOT_FOUND", `No run "${o.runId}" in ${db.path}`, { runId: o.runId });
    // The run row locked before its nodes are read: a run suspending at this moment holds that
    // lock (its owner check) until it commits, so either this sees its waiting nodes and makes it
    // due, or its last look (arrivedMeanwhile) sees this signal. Read around it, under READ
    // COMMITTED both missed the other and the run waited for good.
    const run = (await runs.lockRun(q, end.runId)) ?? end;
    const { runId } = run;
    if (isOver(run.status)) {
      throw new SmithersError("RUN_ENDED", `Run "${runId}" is ${run.status}; a signal can no longer reach it`, { runId, status: run.status });
    }
    const waitingNodes: SentSignal["waitingNodes"] = [];
    for (const node of await nodeRows.readNodesInState(q, runId, "waiting-event")) {
      const wait = waitOf(node.waitJson);
      if (!wait || wait.event !== o.name || (wait.correlationId !== null && wait.correlationId !== (o.correlationId ?? null))) continue;
      const problems = wait.schema ? checkAgainstJsonSchema(wait.schema, data) : undefined;
      if (problems) {
        throw new SmithersError("SIGNAL_INVALID", `The payload of signal "${o.name}" does not match what "${node.nodeId}" waits for:\n${problems}`, {
          runId,
          nodeId: node.nodeId,
          issues: problems,
        });
      }
      waitingNodes.push({ nodeId: node.nodeId, iteration: node.iteration });
    }
    const { seq, duplicate } = await signals.insertOrFindIn(q, {
      runId,
      signalName: o.name,
      correlationId: o.correlationId ?? null,
      payloadJson,
      receivedAtMs: nowMs,
      receivedBy: o.by ?? null,
      dedupeKey: o.dedupeKey ?? null,
    });
    if (waitingNodes.length > 0 && !duplicate) await runs.markRunDue(q, runId, nowMs);
    return { runId, name: o.name, seq, duplicate, waitingNodes: duplicate ? [] : waitingNodes };
  });
}
