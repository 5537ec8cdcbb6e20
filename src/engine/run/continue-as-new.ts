/**
 * Continuing a run as a new one (`<ContinueAsNew>`, `<Loop continueAsNewEvery>`). In the one
 * transaction that ends the old run `continued`, its successor is created: a run row (status
 * `running`, the same owner, workflow and input, linked both ways), its input row, and for a loop
 * its loop states and the latest output and node rows. The successor's id is derived from the
 * old run's (`<first run id>~<generation>`), so a crash either side of that commit leaves exactly
 * one successor or none, and whoever resumes the chain finds it.
 */
import { copyLatestOutputRows, nodes, ralph, runs, writeInput, type Sql, type OutputRegistry, type Usage } from "../../db/index.ts";
import { withCarriedUsage } from "../core/index.ts";
import { SmithersError } from "../../errors/index.ts";
import type { Continuation, LoopState } from "../../jsx/index.ts";
import type { EventBody } from "../core/index.ts";
import type { ContinueFrom } from "../schedule/index.ts";

/** The key of the continuation in a continued run's `ctx.input`. */
export const CONTINUATION_KEY = "__smithersContinuation";

const GENERATION = /^(.*)~(\d+)$/;

/** `run` -> `run~1` -> `run~2` …: the id of the run that continues `runId` (itself a continuation when `continuedFrom` is set). */
export function successorRunId(runId: string, continuedFrom: string | null): { runId: string; generation: number } {
  const match = continuedFrom === null ? null : GENERATION.exec(runId);
  if (!match) return { runId: `${runId}~1`, generation: 1 };
  const generation = Number(match[2]) + 1;
  return { runId: `${match[1]}~${generation}`, generation };
}

/**
 * A continued run's ctx.input: its stored input with the continuation under CONTINUATION_KEY (an
 * input that is not an object is replaced by an object holding only the continuation).
 */
export function withContinuation(input: unknown, continuationJson: string | null): unknown {
  if (continuationJson === null) return input;
  const continuation = JSON.parse(continuationJson) as Continuation;
  const base = typeof input === "object" && input !== null && !Array.isArray(input) ? input : {};
  return { ...base, [CONTINUATION_KEY]: continuation };
}

export type ContinueArgs = {
  registry: OutputRegistry;
  runId: string;
  ownerId: string;
  /** The run's input as stored (without its own continuation). */
  input: unknown;
  /** The run's loop states now. */
  loops: ReadonlyMap<string, LoopState>;
  from: ContinueFrom;
  /** The iteration the run is at (reported for a `<ContinueAsNew>`). */
  iteration: number;
  nowMs: number;
  /** What the chain spent up to now (carried, so its limits hold across the chain). */
  usage: Usage;
};

/**
 * Inside the run's last transaction: creates the successor and returns its id and the event
 * that announces it (the caller marks the old run `continued` with `next_run_id`).
 */
export async function createSuccessor(q: Sql, a: ContinueArgs): Promise<{ nextRunId: string; event: EventBody }> {
  const old = await runs.readRun(q, a.runId);
  if (!old) throw new SmithersError("RUN_NOT_FOUND", `Run "${a.runId}" is gone; it cannot continue`, { runId: a.runId });
  const next = successorRunId(a.runId, old.continuedFromRunId);
  if (await runs.runExists(q, next.runId)) {
    throw new SmithersError("RUN_EXISTS", `Run "${a.runId}" cannot continue as "${next.runId}": a run with that id already exists`, { runId: next.runId });
  }
  const payload = a.from.kind === "node" ? a.from.node.state : undefined;
  const continuation: Continuation = { ...(payload === undefined ? {} : { payload }), fromRunId: a.runId, generation: next.generation };
  await runs.insertRunRow(q, {
    runId: next.runId,
    parentRunId: old.parentRunId,
    forkedFromFrame: old.forkedFromFrame,
    workflowName: old.workflowName,
    workflowPath: old.workflowPath,
    workflowHash: old.workflowHash,
    status: "running",
    createdAtMs: a.nowMs,
    startedAtMs: a.nowMs,
    heartbeatAtMs: a.nowMs,
    runtimeOwnerId: a.ownerId,
    inputHash: old.inputHash,
    configJson: withCarriedUsage(old.configJson, a.usage),
    continuedFromRunId: a.runId,
    continuationJson: JSON.stringify(continuation),
    rootDir: old.rootDir,
  });
  await writeInput(q, a.registry, next.runId, a.input);
  let iteration = a.iteration;
  if (a.from.kind === "loop") {
    // The loop goes on at its next iteration; the other loops keep where they are; what finished stays finished.
    const { loop } = a.from;
    iteration = loop.iteration + 1;
    const carried = new Map(a.loops).set(loop.loopId, { iteration, done: false });
    for (const [ralphId, state] of carried) await ralph.setLoopState(q, { runId: next.runId, ralphId, ...state, updatedAtMs: a.nowMs });
    await nodes.copyLatestEndedNodes(q, a.runId, next.runId, a.nowMs);
    for (const info of a.registry.all()) await copyLatestOutputRows(q, info, a.runId, next.runId);
  }
  const carriedStateSize = a.from.kind === "node" ? a.from.node.stateBytes : 0;
  return { nextRunId: next.runId, event: { type: "RunContinuedAsNew", status: "continued", newRunId: next.runId, iteration, carriedStateSize } };
}
