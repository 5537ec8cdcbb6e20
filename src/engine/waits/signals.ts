/**
 * Sending a signal to a run from outside it (`smithers signal`, sendSignal()). The signal is
 * stored with the next seq of the run; a node waiting for it takes it on the run's next step, or
 * when it mounts if it is not waiting yet. A run that already waits is made due, so the daemon
 * wakes it.
 */
import { nodes as nodeRows, runs, signals, type SmithersDb, type Sql } from "../../db/index.ts";
import { SmithersError } from "../../errors/index.ts";
import { checkAgainstJsonSchema } from "../../schema/index.ts";
import { isOver, isWaiting } from "../core/index.ts";

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
  /** The run that took it: the one addressed (the last of its chain), or the child run it went to (see sendSignal). */
  runId: string;
  /** Set when it went to a child run: the run it was addressed to (the last of its chain). */
  viaRunId?: string;
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

/** The nodes of run `runId` waiting now for this signal; SIGNAL_INVALID when the payload fails one's schema. */
async function waitingFor(q: Sql, runId: string, o: SendSignalOptions, data: unknown): Promise<SentSignal["waitingNodes"]> {
  const found: SentSignal["waitingNodes"] = [];
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
    found.push({ nodeId: node.nodeId, iteration: node.iteration });
  }
  return found;
}

type Target = { runId: string; waitingNodes: SentSignal["waitingNodes"] } | { runId: string; duplicateSeq: number };

/**
 * Which run a signal sent to `run` is for: the run itself when one of its nodes waits for it (or
 * when none waits anywhere: the first node that waits later takes it); else the one descendant run
 * (`<Subflow>` child, grandchild …) with a node waiting for it, as `approve` reaches a child's gate.
 * SIGNAL_AMBIGUOUS when several descendants wait for it (address one by its run id). A signal whose
 * dedupeKey a descendant already stored is that one.
 */
async function targetOf(q: Sql, run: runs.RunRow, o: SendSignalOptions, data: unknown): Promise<Target> {
  const own = await waitingFor(q, run.runId, o, data);
  // Descendants are read only when they can matter: nothing waits here, or a retry may have gone to one.
  const family = own.length === 0 || o.dedupeKey !== undefined ? await runs.readDescendantRuns(q, run.runId) : [];
  if (o.dedupeKey !== undefined && family.length > 0) {
    const seen = await signals.findByDedupeKeyIn(
      q,
      family.map((r) => r.runId),
      o.dedupeKey,
    );
    if (seen) return { runId: seen.runId, duplicateSeq: seen.seq };
  }
  if (own.length > 0) return { runId: run.runId, waitingNodes: own };
  const children: { runId: string; waitingNodes: SentSignal["waitingNodes"] }[] = [];
  for (const child of family.filter((r) => isWaiting(r.status)).sort((a, b) => (a.runId < b.runId ? -1 : 1))) {
    const waitingNodes = await waitingFor(q, child.runId, o, data);
    if (waitingNodes.length > 0) children.push({ runId: child.runId, waitingNodes });
  }
  if (children.length > 1) {
    throw new SmithersError(
      "SIGNAL_AMBIGUOUS",
      `Signal "${o.name}": nothing in run "${run.runId}" waits for it, but ${children.length} of its child runs do; send it to one of them: ${children.map((c) => c.runId).join(", ")}`,
      { runId: run.runId, childRunIds: children.map((c) => c.runId) },
    );
  }
  return children[0] ?? { runId: run.runId, waitingNodes: [] };
}

/**
 * Stores a signal for a run (for the last run of its chain when it continued as new: see
 * `<ContinueAsNew>`). When no node of the run waits for it but one of a `<Subflow>` child run (or
 * deeper) does, it goes to that child run: `runId` in the answer says which run took it.
 * RUN_NOT_FOUND for an unknown run, RUN_ENDED for one that finished, failed or was cancelled,
 * SIGNAL_INVALID (field by field) when the payload fails the schema of a node waiting for it,
 * SIGNAL_AMBIGUOUS when several child runs wait for it; in each case nothing is stored.
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
    if (isOver(run.status)) {
      throw new SmithersError("RUN_ENDED", `Run "${run.runId}" is ${run.status}; a signal can no longer reach it`, { runId: run.runId, status: run.status });
    }
    const target = await targetOf(q, run, o, data);
    const { runId } = target;
    const via = runId === run.runId ? {} : { viaRunId: run.runId };
    if ("duplicateSeq" in target) return { runId, ...via, name: o.name, seq: target.duplicateSeq, duplicate: true, waitingNodes: [] };
    const { seq, duplicate } = await signals.insertOrFindIn(q, {
      runId,
      signalName: o.name,
      correlationId: o.correlationId ?? null,
      payloadJson,
      receivedAtMs: nowMs,
      receivedBy: o.by ?? null,
      dedupeKey: o.dedupeKey ?? null,
    });
    // markRunDue makes the waiting ancestors of a child run due too: the daemon resumes the top one.
    if (target.waitingNodes.length > 0 && !duplicate) await runs.markRunDue(q, runId, nowMs);
    return { runId, ...via, name: o.name, seq, duplicate, waitingNodes: duplicate ? [] : target.waitingNodes };
  });
}
