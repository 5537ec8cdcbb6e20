/**
 * `<Subflow>`'s work: a child run of another workflow in the parent's database, linked by
 * `parent_run_id`. The child's id is derived from the parent node, so a retry of the node or a
 * resume of the parent after a crash resumes that same child (its finished tasks are kept)
 * instead of starting a second one; a child that already finished is only read back. A child that
 * stops to wait (an approval, a signal, a timer) makes the node wait in the same state.
 */
import { attempts, normalizeRow, readOutputRows, runs, stripBookkeeping, type SmithersDb, type Usage } from "../../db/index.ts";
import type { ModelPricing } from "../../agents/index.ts";
import { addToTotals, carriedUsage, NO_USAGE, remainingBudget, usageSince, type Budget } from "../core/index.ts";
import { SmithersError } from "../../errors/index.ts";
import type { PlanTask } from "../../jsx/index.ts";
import { isWaiting, type RunStatus } from "../core/index.ts";
import type { SmithersWorkflow } from "../workflow/index.ts";

/** The child run's id: one per parent node and iteration, the same across attempts and resumes. */
export const subflowRunId = (parentRunId: string, nodeId: string, iteration: number) => `${parentRunId}/${nodeId}#${iteration}`;

/** What a child run is started with: the RunOptions a `<Subflow>` sets. */
export type ChildRunOptions = Budget & {
  runId: string;
  resume: boolean;
  input: unknown;
  parentRunId: string;
  signal: AbortSignal;
  waitInPlaceMs: number | undefined;
  rootDir: string | undefined;
  pricing?: ModelPricing;
};

/** How a child run ended: what runWorkflow returns. */
export type ChildRunResult = { runId: string; status: RunStatus; output?: unknown; error?: SmithersError; usage?: Usage };

/**
 * Starts, resumes or reads back a child run: runWorkflow, handed down by the run that executes the
 * parent (waits/ does not import the run loop, which imports waits/).
 */
export type StartChildRun = (workflow: SmithersWorkflow, options: ChildRunOptions) => Promise<ChildRunResult>;

export type SubflowWork = {
  db: SmithersDb;
  startChildRun: StartChildRun;
  parentRunId: string;
  task: PlanTask;
  signal: AbortSignal;
  /** The parent's setting, passed on: a child timer due within it is waited for in place. */
  waitInPlaceMs?: number;
  /** The node's working directory (its `<Worktree>`, else the parent's root): the child run's root directory. */
  rootDir?: string;
  /**
   * The parent's limits, what it spent so far and its prices: the child may spend what is left,
   * and what it spent in this attempt is reported to `onUsage` (the parent counts it as its own).
   */
  spend?: { budget: Budget; spent: Usage; pricing?: ModelPricing; onUsage: (usage: Usage) => void };
};

/** A run's spend so far: its chain's carried spend plus its own attempts (of the last run of its chain). */
async function chainUsage(db: SmithersDb, runId: string): Promise<Usage> {
  const end = (await runs.getChainEnd(db, runId)) ?? (await runs.getRun(db, runId));
  if (!end) return NO_USAGE;
  return db.read("subflowUsage", async (q) => addToTotals(carriedUsage(end.configJson), await attempts.sumRunUsage(q, end.runId)));
}

/** Databases whose tables already hold a given child workflow's outputs. */
const migrated = new WeakMap<SmithersDb, WeakSet<SmithersWorkflow>>();

/** The child runs on the parent's connection (also a `:memory:` one), its output tables created there first. */
async function onParentDb(db: SmithersDb, child: SmithersWorkflow): Promise<SmithersWorkflow> {
  let done = migrated.get(db);
  if (!done) migrated.set(db, (done = new WeakSet()));
  if (!done.has(child)) {
    // In a queue turn: DDL must not land inside another run's open transaction on this connection.
    await db.ensureOutputTables([child.registry.input, ...child.registry.all()]);
    done.add(child);
  }
  return { ...child, dbFor: () => db };
}

/**
 * The rows the child wrote to its declared result output (`smithers(build, { output })`), without
 * their keys: none is null, one is that object, several are an array in (iteration, node id) order.
 */
async function declaredResult(db: SmithersDb, child: SmithersWorkflow, runId: string): Promise<unknown> {
  const info = child.registry.resolve(child.output!);
  const rows = (await db.read("subflowResult", async (q) => await readOutputRows(q, info, runId))).map(normalizeRow);
  rows.sort((a, b) => a.iteration - b.iteration || (a.nodeId < b.nodeId ? -1 : a.nodeId > b.nodeId ? 1 : 0));
  const values = rows.map(stripBookkeeping);
  return values.length === 0 ? null : values.length === 1 ? values[0] : values;
}

/** Runs (or resumes, or reads back) the child run and returns its result, the parent node's output. */
export async function runSubflow(w: SubflowWork): Promise<unknown> {
  const { task } = w;
  const child = task.subflow!.workflow as SmithersWorkflow;
  const runId = subflowRunId(w.parentRunId, task.nodeId, task.iteration);
  const workflow = await onParentDb(w.db, child);
  const existing = await runs.getRun(w.db, runId);
  const before = existing && w.spend ? await chainUsage(w.db, runId) : NO_USAGE;
  const childSpend = w.spend ? { ...remainingBudget(w.spend.budget, w.spend.spent, before), ...(w.spend.pricing ? { pricing: w.spend.pricing } : {}) } : {};
  const result = await w.startChildRun(workflow, {
    ...childSpend,
    runId,
    resume: existing !== undefined,
    input: task.subflow!.input,
    parentRunId: w.parentRunId,
    signal: w.signal,
    waitInPlaceMs: w.waitInPlaceMs,
    rootDir: w.rootDir,
  });
  if (w.spend) w.spend.onUsage(usageSince(before, result.usage ?? (await chainUsage(w.db, result.runId))));
  // A child that continued as new runs ended in the last run of its chain: its result is that run's.
  if (result.status === "finished") return child.output === undefined ? (result.output ?? null) : await declaredResult(w.db, child, result.runId);
  if (isWaiting(result.status)) {
    // Not a failure: the node waits with its child, until the child is due (runs.markRunDue marks the parent too).
    const wakeAtMs = (await runs.getRun(w.db, result.runId))?.wakeAtMs ?? null;
    throw new SmithersError("SUBFLOW_WAITING", `Subflow "${task.nodeId}": child run ${runId} is ${result.status}`, {
      childRunId: runId,
      childStatus: result.status,
      wakeAtMs,
    });
  }
  if (result.status === "cancelled") {
    throw new SmithersError("TASK_CANCELLED", `Subflow "${task.nodeId}" was cancelled (child run ${runId})`, { childRunId: runId });
  }
  const cause = result.error;
  // The child reached the budget it was given (the parent's): so has the parent.
  if (cause && (cause.code === "BUDGET_EXCEEDED" || cause.code === "BUDGET_UNPRICED")) {
    throw new SmithersError(cause.code, `Subflow "${task.nodeId}": ${cause.message}`, { ...cause.details, childRunId: runId });
  }
  throw new SmithersError("SUBFLOW_FAILED", `Subflow "${task.nodeId}": child run ${runId} ${result.status}${cause ? `: ${cause.message}` : ""}`, {
    childRunId: runId,
    childStatus: result.status,
    childError: cause ? { code: cause.code, message: cause.message } : undefined,
    cause,
  });
}
