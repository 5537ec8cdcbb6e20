/**
 * Fork and rewind: going back to a frame of a run. A fork is a new run (linked by
 * `parent_run_id` and `forked_from_frame`) that holds its parent's outputs as of the frame,
 * minus the nodes reset and everything downstream of them; the parent is never written. A
 * rewind resets an ended run in place to the frame, in one transaction, keeping what it removed
 * in a `RunRewound` event. Both read the tool-call journal first: a side effect that stands
 * (succeeded, or started with no outcome) in history that would be discarded or run again stops
 * them with SIDE_EFFECT_BOUNDARY unless forced; rewind first runs the tools' declared reverts,
 * newest first.
 */
import { frames, history, loadInput, nodes as nodeRows, runs, writeInput, events as eventRows, type SmithersDb, type Sql } from "../../db/index.ts";
import { errorToJson, SmithersError } from "../../errors/index.ts";
import { nodeKey } from "../../jsx/plan.ts";
import { storedBudget, withBudget } from "../core/index.ts";
import { clearFrameCache } from "./frames.ts";
import { downstreamOf, runAtFrame, type RunAtFrame } from "./run-at-frame.ts";
import type { SmithersWorkflow } from "../workflow/index.ts";
import { checkNewRunId, type EventBody } from "../core/index.ts";

/** A journaled side effect that going back would discard or run again. */
export type CrossedCall = {
  nodeId: string;
  iteration: number;
  attempt: number;
  seq: number;
  toolName: string;
  /** `succeeded`: it happened; `unknown`: its process died during it. */
  outcome: "succeeded" | "unknown";
  idempotencyKey: string | null;
  /** Its tool declared a `revert` (known in this process: the workflow's module was loaded). */
  revertible: boolean;
};

type StandingCall = Awaited<ReturnType<typeof history.standingSideEffects>>[number];

/**
 * The tools and the workflow rooms, loaded by the first fork or rewind: they bring the agents and
 * the renderer, which reading a run's history (`frames`, `timeline`, `prune`) never needs.
 */
const toolsRoom = () => import("../../tools/index.ts");
const workflowRoom = () => import("../workflow/index.ts");
type RevertOf = Awaited<ReturnType<typeof toolsRoom>>["toolRevert"];

const toCrossed =
  (toolRevert: RevertOf) =>
  (c: StandingCall): CrossedCall => ({
    nodeId: c.nodeId,
    iteration: c.iteration,
    attempt: c.attempt,
    seq: c.seq,
    toolName: c.toolName,
    outcome: c.status === "succeeded" ? "succeeded" : "unknown",
    idempotencyKey: c.idempotencyKey,
    revertible: toolRevert(c.toolName) !== undefined,
  });

/** The run's standing side effects made by nodes outside `kept` (what going back discards or runs again). */
async function crossedCalls(db: SmithersDb, runId: string, kept: ReadonlySet<string>): Promise<StandingCall[]> {
  const calls = await db.read("standingSideEffects", (q) => history.standingSideEffects(q, runId));
  return calls.filter((c) => !kept.has(nodeKey(c.nodeId, c.iteration)));
}

function boundary(command: string, runId: string, calls: CrossedCall[], extra: Record<string, unknown> = {}): SmithersError {
  const list = calls.map((c) => `${c.toolName} (${c.outcome}) in ${c.nodeId}${c.iteration > 0 ? `#${c.iteration}` : ""} attempt ${c.attempt}`).join("; ");
  return new SmithersError(
    "SIDE_EFFECT_BOUNDARY",
    `${command} of run "${runId}" would cross ${calls.length} side effect${calls.length === 1 ? "" : "s"} that happened or may have: ${list}. Pass --force (force: true) to go on anyway`,
    { runId, calls, ...extra },
  );
}

/** Frame `frame` of the run, checked: a whole number from 0 to its last frame. */
async function checkedFrame(db: SmithersDb, runId: string, frame: number): Promise<RunAtFrame> {
  const last = await frames.lastFrameNo(db, runId);
  if (!Number.isInteger(frame) || frame < 0 || frame > last) {
    const range = last < 0 ? "it has no frames" : `its frames are 0 to ${last}`;
    throw new SmithersError("FRAME_NOT_FOUND", `Run "${runId}" has no frame ${frame}: ${range}`, { runId, frameNo: frame, lastFrameNo: last });
  }
  return runAtFrame(db, runId, frame);
}

/** Keys of the tasks over (finished or skipped) at the frame, but those reset. */
function keptAt(at: RunAtFrame, reset: ReadonlySet<string>): Set<string> {
  // Only the iteration mounted in the frame is reset: earlier iterations of a loop stay done.
  const kept = new Set<string>();
  for (const [key, t] of at.tasks) {
    if (t.state !== "finished" && t.state !== "skipped") continue;
    if (reset.has(t.nodeId) && at.mounted.has(key)) continue;
    kept.add(key);
  }
  return kept;
}

/** Stores events inside the transaction, as the event bus stores them (runId, type and time as columns). */
async function appendEvents(q: Sql, runId: string, nowMs: number, list: EventBody[]): Promise<void> {
  await eventRows.insertEventsIn(
    q,
    list.map(({ type, ...payload }) => ({ runId, timestampMs: nowMs, type, payloadJson: JSON.stringify(payload) })),
    { dedupe: false },
  );
}

export type ForkOptions = {
  /** The run to fork. */
  runId: string;
  /** The frame whose state the fork starts from. */
  frame: number;
  /** Task ids (of that frame) to run again, with everything downstream of them. */
  resetNodes?: readonly string[];
  /** The fork's input (checked against the input schema); default: the parent's. */
  input?: unknown;
  /** The fork's id; default: a new UUID. */
  newRunId?: string;
  /** Go on although side effects of the parent would run again in the fork (recorded as an event on the fork). */
  force?: boolean;
  dbPath?: string;
  /** The database (default: the workflow's at dbPath). */
  db?: SmithersDb;
  /** The workflow file the fork runs (default: the parent's). */
  workflowPath?: string;
  nowMs?: number;
};

export type ForkResult = {
  runId: string;
  parentRunId: string;
  frame: number;
  /** Tasks whose outputs the fork holds from its parent. */
  copied: number;
  /** Node ids reset: those asked for and everything downstream of them. */
  reset: string[];
  /** Side effects of the parent the fork will run again (only when forced). */
  crossed: CrossedCall[];
};

/**
 * Creates a fork of a run at one of its frames (status `paused`: `runWorkflow(wf, { runId, resume:
 * true })` or `smithers up --resume` executes it). Nothing of the parent is written.
 * @example
 * const fork = await forkRun(workflow, { runId, frame: 5, resetNodes: ["analyze"] });
 * await runWorkflow(workflow, { runId: fork.runId, resume: true });
 */
export async function forkRun(workflow: SmithersWorkflow, o: ForkOptions): Promise<ForkResult> {
  if (o.newRunId !== undefined) checkNewRunId(o.newRunId);
  const db = o.db ?? workflow.dbFor(o.dbPath);
  const nowMs = o.nowMs ?? Date.now();
  const parent = await runs.getRun(db, o.runId);
  if (!parent) throw new SmithersError("RUN_NOT_FOUND", `No run "${o.runId}" in ${db.path}`, { runId: o.runId });
  const at = await checkedFrame(db, o.runId, o.frame);
  const mountedIds = new Set([...at.mounted].map((key) => at.tasks.get(key)!.nodeId));
  for (const id of o.resetNodes ?? []) {
    if (!mountedIds.has(id)) {
      throw new SmithersError("NODE_NOT_FOUND", `Frame ${o.frame} of run "${o.runId}" has no task "${id}" mounted`, {
        runId: o.runId,
        frameNo: o.frame,
        nodeId: id,
      });
    }
  }
  const reset = downstreamOf(at.tree, o.resetNodes ?? []);
  const kept = keptAt(at, reset);
  const [{ toolRevert }, { codeHashOf, hashInput, validateInput }] = await Promise.all([toolsRoom(), workflowRoom()]);
  const input = o.input === undefined ? await loadInput(db, workflow.registry, o.runId) : validateInput(workflow.registry, o.input);
  const crossed = (await crossedCalls(db, o.runId, kept)).map(toCrossed(toolRevert));
  if (crossed.length > 0 && !o.force) throw boundary("A fork", o.runId, crossed, { frameNo: o.frame });
  const runId = o.newRunId ?? crypto.randomUUID();
  const workflowPath = o.workflowPath ?? parent.workflowPath;
  const parentNodes = new Map((await nodeRows.listNodes(db, o.runId)).map((n) => [nodeKey(n.nodeId, n.iteration), n]));
  const copiedRows = [...kept].map((key) => {
    const t = at.tasks.get(key)!;
    const n = parentNodes.get(key);
    return {
      runId,
      nodeId: t.nodeId,
      iteration: t.iteration,
      state: t.state,
      lastAttempt: n?.lastAttempt ?? null,
      updatedAtMs: nowMs,
      outputTable: n?.outputTable || t.outputTable,
      label: n?.label ?? t.label ?? null,
      defSig: n?.defSig ?? null,
    };
  });
  const byTable = new Map<string, { nodeId: string; iteration: number }[]>();
  for (const r of copiedRows) {
    if (r.state !== "finished" || !r.outputTable) continue;
    let list = byTable.get(r.outputTable);
    if (!list) byTable.set(r.outputTable, (list = []));
    list.push({ nodeId: r.nodeId, iteration: r.iteration });
  }
  await db.withTransaction("forkRun", async (q) => {
    if (await runs.runExists(q, runId)) throw new SmithersError("RUN_EXISTS", `Run "${runId}" already exists; pick another --run-id`, { runId });
    await runs.insertRunRow(q, {
      runId,
      parentRunId: o.runId,
      forkedFromFrame: o.frame,
      workflowName: parent.workflowName,
      workflowPath,
      // A file that is gone pins nothing new: the fork keeps its parent's code hash.
      workflowHash: (workflowPath ? codeHashOf(workflowPath) : undefined) ?? parent.workflowHash,
      status: "paused",
      createdAtMs: nowMs,
      inputHash: hashInput(input),
      configJson: withBudget(null, storedBudget(parent.configJson)),
      rootDir: parent.rootDir,
    });
    await writeInput(q, workflow.registry, runId, input);
    await history.insertNodeRows(q, copiedRows);
    for (const [table, keys] of byTable) await history.copyOutputRows(q, table, o.runId, runId, keys);
    await history.replaceLoopStates(q, runId, at.loops, nowMs);
    await appendEvents(q, runId, nowMs, [
      {
        type: "RunForked",
        status: "paused",
        parentRunId: o.runId,
        frameNo: o.frame,
        resetNodes: [...(o.resetNodes ?? [])],
        reset: [...reset],
        copied: copiedRows.length,
      },
      ...(crossed.length > 0 ? [{ type: "SideEffectBoundaryCrossed" as const, command: "fork" as const, fromRunId: o.runId, calls: crossed }] : []),
    ]);
  });
  return { runId, parentRunId: o.runId, frame: o.frame, copied: copiedRows.length, reset: [...reset], crossed };
}

export type ForkRef = { runId: string; status: string; createdAtMs: number };

/** The runs forked from each frame of `runId` (fork, replay), by frame number, oldest first. */
export async function forksByFrame(db: SmithersDb, runId: string): Promise<Map<number, ForkRef[]>> {
  const at = new Map<number, ForkRef[]>();
  for (const f of await runs.listForks(db, runId)) {
    const list = at.get(f.forkedFromFrame!) ?? [];
    list.push({ runId: f.runId, status: f.status, createdAtMs: f.createdAtMs });
    at.set(f.forkedFromFrame!, list);
  }
  return at;
}

export type RewindOptions = {
  runId: string;
  frame: number;
  /** Go on although side effects would be discarded unreverted (recorded in the RunRewound event). */
  force?: boolean;
  /** Run the tools' reverts first (default true); false leaves every crossed call a blocker. */
  revert?: boolean;
  nowMs?: () => number;
};

export type RewindResult = {
  runId: string;
  frame: number;
  /** The run's last frame before the rewind. */
  fromFrame: number;
  /** Task keys whose outputs and states were removed. */
  removedNodes: number;
  removedOutputs: number;
  removedFrames: number;
  /** Calls whose revert ran (newest first). */
  reverted: CrossedCall[];
  /** Calls crossed without a revert (only with force). */
  crossed: CrossedCall[];
};

/** The calls of `crossed` that are not in `reverted`. */
const notReverted = (crossed: CrossedCall[], reverted: CrossedCall[]) =>
  crossed.filter((c) => !reverted.some((r) => r.attempt === c.attempt && r.seq === c.seq && r.nodeId === c.nodeId && r.iteration === c.iteration));

const REWINDABLE = new Set(["finished", "failed", "cancelled", "paused"]);

/**
 * Resets an ended run (finished, failed, cancelled, or paused) in place to frame `frame`: output
 * rows, approvals and human requests of the tasks not over at that frame and the frames after it
 * are removed, and those tasks' states set back to pending (their attempts stay, as history), in
 * one transaction, and kept in a `RunRewound` event. The run is
 * left `paused`; resume it to go on from there. The workflow's module must be loaded in this
 * process for its tools' reverts to be known (the CLI loads the run's workflow file).
 */
export async function rewindRun(db: SmithersDb, o: RewindOptions): Promise<RewindResult> {
  const now = o.nowMs ?? Date.now;
  const run = await runs.getRun(db, o.runId);
  if (!run) throw new SmithersError("RUN_NOT_FOUND", `No run "${o.runId}" in ${db.path}`, { runId: o.runId });
  const notRewindable = (status: string) =>
    new SmithersError(
      "RUN_NOT_REWINDABLE",
      `Run "${o.runId}" is ${status}: only a finished, failed, cancelled or paused run can be rewound${status === "continued" ? " (rewind the run it continued as)" : ""}`,
      {
        runId: o.runId,
        status,
      },
    );
  if (!REWINDABLE.has(run.status)) throw notRewindable(run.status);
  const fromFrame = await frames.lastFrameNo(db, o.runId);
  const at = await checkedFrame(db, o.runId, o.frame);
  const kept = keptAt(at, new Set());
  const standing = await crossedCalls(db, o.runId, kept);
  const { toolRevert } = await toolsRoom();
  const crossedOf = toCrossed(toolRevert);
  const crossed = standing.map(crossedOf);
  const revert = o.revert ?? true;
  const unrevertible = crossed.filter((c) => !revert || !c.revertible);
  if (unrevertible.length > 0 && !o.force) throw boundary("A rewind", o.runId, unrevertible, { frameNo: o.frame, reverts: revert });
  // Reverts run before anything is discarded, newest call first; each is marked once it ran.
  const reverted: CrossedCall[] = [];
  if (revert) {
    for (let i = standing.length - 1; i >= 0; i--) {
      const call = standing[i]!;
      const fn = toolRevert(call.toolName);
      if (!fn) continue;
      try {
        await fn(call.inputJson === null ? undefined : JSON.parse(call.inputJson), {
          runId: o.runId,
          nodeId: call.nodeId,
          iteration: call.iteration,
          attempt: call.attempt,
          idempotencyKey: call.idempotencyKey ?? "",
          outcome: call.status === "succeeded" ? "succeeded" : "unknown",
          output: call.outputJson === null ? undefined : JSON.parse(call.outputJson),
        });
      } catch (error) {
        if (!o.force)
          throw boundary("A rewind", o.runId, notReverted(crossed, reverted), {
            frameNo: o.frame,
            reverted,
            revertFailed: { call: crossedOf(call), error: errorToJson(error) },
          });
        continue;
      }
      await db.write("markToolCallReverted", (q) => history.markToolCallReverted(q, { runId: o.runId, ...call }));
      reverted.push(crossedOf(call));
    }
  }
  const left = notReverted(crossed, reverted);
  const nodes = await nodeRows.listNodes(db, o.runId);
  const removed = nodes.filter((n) => !kept.has(nodeKey(n.nodeId, n.iteration)));
  const tables = new Set(nodes.map((n) => n.outputTable).filter((t) => t !== ""));
  let removedOutputs = 0;
  let removedFrames = 0;
  await db.withTransaction("rewindRun", async (q) => {
    const current = await runs.lockRun(q, o.runId);
    if (!current || !REWINDABLE.has(current.status)) throw notRewindable(current?.status ?? "gone");
    const outputs: { table: string; row: Record<string, unknown> }[] = [];
    for (const table of tables) {
      const rows = await history.readOutputTableRows(q, table, o.runId);
      const gone = rows.filter((r) => !kept.has(nodeKey(String(r.node_id), typeof r.iteration === "number" ? r.iteration : Number(r.iteration ?? 0))));
      for (const row of gone) outputs.push({ table, row });
      const keys = gone.map((r) => ({ nodeId: String(r.node_id), iteration: Number(r.iteration ?? 0) }));
      removedOutputs += await history.deleteOutputRows(q, table, o.runId, keys);
    }
    const frameRows = await history.framesAfter(q, o.runId, o.frame);
    removedFrames = await history.deleteFramesAfter(q, o.runId, o.frame);
    const keys = removed.map((n) => ({ nodeId: n.nodeId, iteration: n.iteration }));
    await history.resetNodeRows(q, o.runId, keys, now());
    const waits = await history.clearWaitsOf(q, o.runId, keys);
    await history.replaceLoopStates(q, o.runId, at.loops, now());
    await runs.setRunFields(q, o.runId, {
      status: "paused",
      finishedAtMs: null,
      errorJson: null,
      wakeAtMs: null,
      runtimeOwnerId: null,
      heartbeatAtMs: null,
      cancelRequestedAtMs: null,
    });
    await appendEvents(q, o.runId, now(), [
      {
        type: "RunRewound",
        status: "paused",
        previousStatus: current.status,
        fromFrame,
        toFrame: o.frame,
        removed: {
          nodes: removed,
          outputs,
          frames: frameRows,
          approvals: waits.approvals,
          humanRequests: waits.humanRequests,
          signalsReleased: waits.signalsReleased,
        },
        reverted,
      },
      ...(left.length > 0 ? [{ type: "SideEffectBoundaryCrossed" as const, command: "rewind" as const, calls: left }] : []),
    ]);
  });
  clearFrameCache(); // frames after the target will be written again with other contents
  return { runId: o.runId, frame: o.frame, fromFrame, removedNodes: removed.length, removedOutputs, removedFrames, reverted, crossed: left };
}
