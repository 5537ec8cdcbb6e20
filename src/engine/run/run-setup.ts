/**
 * Starting or resuming a run: input validation and persistence, the resume checks (input
 * unchanged, previous owner gone), and the repair of what a dead or failed run left behind.
 */
import { rmSync } from "node:fs";
import {
  approvals,
  attempts as attemptRows,
  loadInput,
  loadOutputKeys,
  loadOutputRows,
  type OutputRow,
  nodes as nodeRows,
  queue,
  ralph,
  runs,
  sandboxes,
  writeInput,
  type OutputKeys,
  type OutputRegistry,
  type SmithersDb,
  type Usage,
} from "../../db/index.ts";
import { errorToJson, SmithersError } from "../../errors/index.ts";
import type { LoopState } from "../../jsx/index.ts";
import { nodeKey } from "../../jsx/index.ts";
import type { NodeError, TrackedNode } from "../schedule/index.ts";
import { withContinuation } from "./continue-as-new.ts";
import type { NodeState } from "../core/index.ts";
import { checkNewRunId } from "../core/index.ts";
import { normalizeUsage, priceUsage, type ModelPricing } from "../../agents/index.ts";
import { ownerAlive } from "../core/index.ts";
import { hashInput, validateInput } from "../workflow/index.ts";
import { addToTotals, carriedUsage, NO_USAGE, storedBudget, withBudget, type Budget } from "../core/index.ts";

export type { TrackedNode } from "../schedule/index.ts";

export type RunSetup = {
  runId: string;
  /** The owner id the run is executed under (written on the run row). */
  ownerId: string;
  /** What ctx.input is: the stored input, with `__smithersContinuation` when the run continues another. */
  input: unknown;
  /** The input as stored for this run (what a successor is started with). */
  storedInput: unknown;
  /** The tasks' working directory outside a `<Worktree>` (absolute): asked for, else the run's recorded one, else process.cwd(). */
  rootDir: string;
  resumed: boolean;
  /** The run had already finished: nothing is run or written, its result is only read back. */
  alreadyFinished: boolean;
  states: Map<string, TrackedNode>;
  loops: Map<string, LoopState>;
  /** Which output rows the run has (their values are read when ctx asks for them). */
  outputKeys: OutputKeys;
  /** Every output row of the run by table key, when the database cannot read one synchronously (see SmithersDb.syncReads). */
  outputRows: Record<string, OutputRow[]> | undefined;
  /** Node ids with a finished or skipped iteration (see decide's finishedIds). */
  finishedIds: Set<string>;
  /**
   * Attempts this resume found left running by a dead process and closed as `abandoned`, with
   * the agent subprocess each had started (a leftover group the resume ends before going on).
   */
  abandoned: { nodeId: string; iteration: number; attempt: number; agentPid: number | null; agentPidStart: string | null }[];
  /** The run's spend limits: given for this execution, else stored on the run, else the workflow's defaults. */
  budget: Budget;
  /** What the run's agent attempts consumed so far. */
  usage: Usage;
  /** A model an attempt reported tokens for without a cost (a cost limit cannot be kept for it). */
  unpricedModel: string | undefined;
  /** Someone asked the run to stop while no process ran it: it is cancelled at once. */
  cancelRequested: boolean;
  /** The name on the run row: the workflow's default until a first render named it (a process killed before that left the default). */
  storedName: string;
  /** The trace context stored with the run (see the runs table's trace_parent), if any. */
  traceParent: string | undefined;
};

export { ACTIVE_OWNERS, newOwnerId, ownerAlive, ownerProcessAlive } from "../core/index.ts";
export { hashInput, validateInput } from "../workflow/index.ts";

export type SetupOptions = {
  db: SmithersDb;
  registry: OutputRegistry;
  workflowName: string;
  workflowPath?: string;
  runId?: string;
  input?: unknown;
  resume?: boolean;
  /** A child run's parent (a `<Subflow>`), recorded in `parent_run_id` when the run is created. */
  parentRunId?: string;
  /** The root directory asked for (absolute); undefined: a new run records process.cwd(), a resumed one keeps its own. */
  rootDir?: string;
  ownerId: string;
  nowMs: number;
  /** How often the owner will heartbeat (stored, so others judge its staleness by it); default DEFAULT_HEARTBEAT_MS. */
  heartbeatMs?: number;
  /** Limits given for this execution (runWorkflow's options): stored on the run, replacing earlier ones field by field. */
  budget?: Budget;
  /** The workflow's limits (createSmithers'), for a run that has none stored. */
  defaultBudget?: Budget;
  /** Prices for attempts stored without a cost. */
  pricing?: ModelPricing;
  /** The hash of the code it runs with (see code-pin.ts): recorded on a new run, and on a resume (checked before, see code-check.ts). */
  workflowHash?: string;
  /** A new run's trace context, given its id (telemetry's, only while a tracer is registered): stored with the run. */
  traceParentOf?: (runId: string) => string | undefined;
};

type Abandoned = RunSetup["abandoned"];

/** Why a resume closed a sandbox session: stored as its error text (the code first, as for every session failure). */
const SESSION_ABANDONED = "TASK_ABANDONED: the engine process stopped while this sandbox ran; closed by the resume (exit unknown)";

type Resumed = {
  input: unknown;
  continuation: string | null;
  rootDir: string | null;
  freshBudget: boolean;
  finished?: boolean;
  abandoned: Abandoned;
  budget: Budget;
  /** What the runs before it in its chain spent. */
  carried: Usage;
  /** It was asked to stop (`smithers cancel`) while its owner was gone: the run is cancelled at once. */
  cancelRequested?: boolean;
  storedName: string;
  traceParent: string | undefined;
};

/** Field by field: given now, else stored, else the workflow's default. */
function effectiveBudget(o: SetupOptions, stored: Budget): Budget {
  const pick = (field: keyof Budget) => o.budget?.[field] ?? stored[field] ?? o.defaultBudget?.[field];
  const budget: Budget = {};
  const maxCostUsd = pick("maxCostUsd");
  const maxTokens = pick("maxTokens");
  if (maxCostUsd !== undefined) budget.maxCostUsd = maxCostUsd;
  if (maxTokens !== undefined) budget.maxTokens = maxTokens;
  return budget;
}

const sameBudget = (a: Budget, b: Budget) => a.maxCostUsd === b.maxCostUsd && a.maxTokens === b.maxTokens;

const continuedError = (runId: string, nextRunId: string | null) =>
  new SmithersError("RUN_NOT_RESUMABLE", `Run "${runId}" continued as run "${nextRunId}"; resume that one`, { runId, nextRunId });

async function resumeRun(o: SetupOptions, runId: string): Promise<Resumed> {
  const run = await runs.getRun(o.db, runId);
  if (!run) throw new SmithersError("RUN_NOT_FOUND", `No run "${runId}" to resume in ${o.db.path}`, { runId });
  if (run.status === "continued") throw continuedError(runId, run.nextRunId);
  const { continuationJson: continuation, rootDir } = run;
  const stored = await loadInput(o.db, o.registry, runId);
  if (o.input !== undefined && hashInput(validateInput(o.registry, o.input)) !== run.inputHash) {
    throw new SmithersError("INPUT_MISMATCH", `Run "${runId}" was started with a different input; resume it without --input or with the same input`, { runId });
  }
  // A finished run has nothing left to do: resuming it only reads its result, and changes nothing.
  const budget = effectiveBudget(o, storedBudget(run.configJson));
  const carried = carriedUsage(run.configJson);
  if (run.status === "finished")
    return {
      input: stored,
      continuation,
      rootDir,
      freshBudget: false,
      finished: true,
      abandoned: [],
      budget,
      carried,
      storedName: run.workflowName,
      traceParent: run.traceParent ?? undefined,
    };
  const abandoned = JSON.stringify(errorToJson(new SmithersError("TASK_ABANDONED", "The process running this attempt stopped before it finished")));
  let abandonedNow: Abandoned = [];
  let staleSessions: { rootDir: string | null }[] = [];
  let cancelRequested = false;
  const outcome = await o.db.withTransaction("resumeRun", async (q): Promise<"finished" | "retry" | "continue"> => {
    // Ownership is judged under the write lock, so two processes resuming at once cannot both win.
    const current = (await runs.lockRun(q, runId)) ?? run;
    if (current.status === "finished") return "finished"; // finished meanwhile by its owner: only read it back
    if (current.status === "continued") throw continuedError(runId, current.nextRunId);
    // A supervisor that won the claim already wrote its own owner id: that is this caller.
    const claimedByCaller = current.runtimeOwnerId === o.ownerId;
    if (current.status === "running" && !claimedByCaller && ownerAlive(current.runtimeOwnerId, current.heartbeatAtMs, o.nowMs, current.heartbeatMs)) {
      throw new SmithersError("RUN_STILL_RUNNING", `Run "${runId}" is still running in process ${current.runtimeOwnerId}`, {
        runId,
        owner: current.runtimeOwnerId,
      });
    }
    // A paused run (a fork not started, a rewound run) starts its nodes afresh like a failed one.
    const retry = current.status === "failed" || current.status === "cancelled" || current.status === "paused";
    await queue.handOff(q, runId); // a queued request to resume it is being done now
    abandonedNow = await attemptRows.abandonRunningAttempts(q, runId, o.nowMs, abandoned);
    staleSessions = await sandboxes.abandonOpenSandboxes(q, runId, o.nowMs, SESSION_ABANDONED);
    await nodeRows.resetNodes(q, runId, retry ? ["running", "failed", "cancelled"] : ["running", "cancelled"], "pending", o.nowMs);
    const budgetChanged = !sameBudget(budget, storedBudget(current.configJson));
    // A request to stop made while the run had no live owner still stands; resuming an ended run is a new start.
    cancelRequested = current.status === "running" && current.cancelRequestedAtMs !== null;
    await runs.setRunFields(q, runId, {
      status: "running",
      runtimeOwnerId: o.ownerId,
      heartbeatAtMs: o.nowMs,
      heartbeatMs: o.heartbeatMs ?? null,
      finishedAtMs: null,
      errorJson: null,
      wakeAtMs: null,
      // A run made without starting (a fork, a queued request's row) starts at its first resume.
      ...(current.startedAtMs === null ? { startedAtMs: o.nowMs } : {}),
      ...(o.workflowHash ? { workflowHash: o.workflowHash } : {}),
      ...(cancelRequested ? {} : { cancelRequestedAtMs: null }),
      ...(budgetChanged ? { configJson: withBudget(current.configJson, budget) } : {}),
    });
    return retry ? "retry" : "continue";
  });
  // The dead process's sandbox dirs: its bwrap died with it (--die-with-parent), nothing else removes them.
  for (const { rootDir } of staleSessions) if (rootDir !== null) rmSync(rootDir, { recursive: true, force: true });
  return {
    input: stored,
    continuation,
    rootDir,
    freshBudget: outcome === "retry",
    finished: outcome === "finished",
    abandoned: abandonedNow,
    budget,
    carried,
    cancelRequested,
    storedName: run.workflowName,
    traceParent: run.traceParent ?? undefined,
  };
}

async function startRun(o: SetupOptions, runId: string, budget: Budget, traceParent: string | undefined): Promise<unknown> {
  const input = validateInput(o.registry, o.input);
  await o.db.withTransaction("startRun", async (q) => {
    // Inserted only if absent, under the write lock: of two processes starting the same run id one inserts, the other is told it exists.
    const inserted = await runs.insertRunRow(
      q,
      {
        runId,
        parentRunId: o.parentRunId ?? null,
        rootDir: o.rootDir ?? process.cwd(),
        workflowName: o.workflowName,
        workflowPath: o.workflowPath ?? null,
        workflowHash: o.workflowHash ?? null,
        status: "running",
        createdAtMs: o.nowMs,
        startedAtMs: o.nowMs,
        heartbeatAtMs: o.nowMs,
        heartbeatMs: o.heartbeatMs ?? null,
        runtimeOwnerId: o.ownerId,
        inputHash: hashInput(input),
        configJson: budget.maxCostUsd === undefined && budget.maxTokens === undefined ? null : withBudget(null, budget),
        traceParent: traceParent ?? null,
      },
      { ifAbsent: true },
    );
    if (!inserted) throw new SmithersError("RUN_EXISTS", `Run "${runId}" already exists; resume it instead (resume: true, or --resume on the CLI)`, { runId });
    await writeInput(q, o.registry, runId, input);
    // Its queued request, if it had one, is taken; an id made here (no runId given) has none.
    if (o.runId !== undefined) await queue.handOff(q, runId);
  });
  return input;
}

/** An abandoned attempt's process died under it (not: its body outlived a stop's grace period). */
function diedUnder(errorJson: string | null): boolean {
  try {
    return errorJson !== null && (JSON.parse(errorJson) as { code?: unknown }).code === "TASK_ABANDONED";
  } catch {
    return false;
  }
}

/**
 * Keeps, of each node's states, its latest iteration and any not yet over: the earlier
 * iterations of a loop are done and never read again (a dependsOn on an id no longer mounted asks
 * finishedIds), so a resumed long loop does not hold its whole history in memory.
 */
function keepCurrentIterations(states: Map<string, TrackedNode>): void {
  const latest = new Map<string, number>();
  for (const key of states.keys()) {
    const at = key.lastIndexOf("#");
    const id = key.slice(0, at);
    latest.set(id, Math.max(latest.get(id) ?? 0, Number(key.slice(at + 1))));
  }
  for (const [key, t] of states) {
    const at = key.lastIndexOf("#");
    const over = t.state === "finished" || t.state === "skipped" || t.state === "failed";
    if (over && Number(key.slice(at + 1)) < latest.get(key.slice(0, at))!) states.delete(key);
  }
}

/** A failed node's stored error summary as `{ code, message }` (TASK_FAILED when the row has none, as rows written before the column). */
function storedError(errorJson: string | null): NodeError {
  try {
    const { code, message } = JSON.parse(errorJson ?? "{}") as { code?: unknown; message?: unknown };
    if (typeof code === "string") return { code, message: typeof message === "string" ? message : code };
  } catch {
    // unreadable: as if absent
  }
  return { code: "TASK_FAILED", message: "The task failed (its error was not recorded)" };
}

type RunOutputs = Pick<RunSetup, "outputKeys" | "outputRows">;

/**
 * What ctx reads of a stored run's outputs: which rows exist, where the database reads a row
 * synchronously when asked; otherwise every row, loaded now (their keys come with them).
 */
export async function loadRunOutputs(db: SmithersDb, registry: OutputRegistry, runId: string): Promise<RunOutputs> {
  if (db.syncReads) return { outputKeys: await loadOutputKeys(db, registry, runId), outputRows: undefined };
  const outputRows: Record<string, OutputRow[]> = {};
  for (const info of registry.all()) outputRows[info.key] = await loadOutputRows(db, info, runId);
  return { outputKeys: {}, outputRows };
}

/** A run created just now: no output rows. */
function noOutputs(db: SmithersDb, registry: OutputRegistry): RunOutputs {
  return { outputKeys: {}, outputRows: db.syncReads ? undefined : Object.fromEntries(registry.all().map((info) => [info.key, []])) };
}

/** Creates or resumes the run and loads everything the engine keeps in memory. */
export async function setupRun(o: SetupOptions): Promise<RunSetup> {
  const runId = o.runId ?? crypto.randomUUID();
  const resumed = Boolean(o.resume);
  if (!resumed) checkNewRunId(runId);
  // Resuming a failed/cancelled run gives its failed nodes a fresh retry budget; a crashed run keeps its count.
  const {
    input: storedInput,
    continuation,
    freshBudget,
    finished,
    abandoned,
    rootDir: recordedRoot,
    budget,
    carried,
    cancelRequested,
    storedName,
    traceParent,
  }: Resumed = resumed
    ? await resumeRun(o, runId)
    : await (async () => {
        const fresh = effectiveBudget(o, {});
        const traceParent = o.traceParentOf?.(runId);
        const started = await startRun(o, runId, fresh, traceParent);
        return {
          input: started,
          continuation: null,
          rootDir: null,
          freshBudget: false,
          finished: false,
          abandoned: [],
          budget: fresh,
          carried: NO_USAGE,
          storedName: o.workflowName,
          traceParent,
        };
      })();
  const input = withContinuation(storedInput, continuation);
  const rootDir = o.rootDir ?? recordedRoot ?? process.cwd();
  // A run created just now has no nodes, attempts, loops or outputs to load.
  const [nodes, attempts, loopRows, { outputKeys, outputRows }, approved] = resumed
    ? await Promise.all([
        nodeRows.nodesToResume(o.db, runId),
        attemptRows.attemptsToResume(o.db, runId),
        ralph.listLoopStates(o.db, runId),
        loadRunOutputs(o.db, o.registry, runId),
        approvals.listApprovals(o.db, { runId, status: "approved" }),
      ])
    : [[], [], [], noOutputs(o.db, o.registry), []];
  const states = new Map<string, TrackedNode>();
  for (const n of nodes) {
    // A pending node's wake time is its retry backoff (kept across a crash; a resume after the
    // run failed or was cancelled retries at once, like it gives a fresh budget).
    const retrying = n.state === "pending" && n.wakeAtMs !== null;
    states.set(nodeKey(n.nodeId, n.iteration), {
      state: n.state as NodeState,
      lastAttempt: n.lastAttempt ?? 0,
      failures: 0,
      abandons: 0,
      wakeAtMs: retrying ? undefined : (n.wakeAtMs ?? undefined),
      retryAtMs: retrying && !freshBudget ? n.wakeAtMs! : undefined,
      ...(n.state === "failed" ? { error: storedError(n.errorJson) } : {}),
    });
  }
  // A gate is decided once: a `<Task needsApproval>` approved before this resume is not asked again.
  for (const g of approved) {
    const tracked = states.get(nodeKey(g.nodeId, g.iteration));
    if (tracked && tracked.state !== "waiting-approval") tracked.gatePassed = true;
  }
  let usage = carried;
  let unpricedModel: string | undefined;
  const repriced: { attempt: (typeof attempts)[number]; costUsd: number }[] = [];
  for (const a of attempts) {
    // An attempt stored without a cost is priced with today's pricing, if it has its model now (and stored so).
    const spent = a.costUsd === null ? priceUsage(normalizeUsage(a, a.agentModel ?? undefined), o.pricing) : undefined;
    if (spent?.costUsd !== undefined) repriced.push({ attempt: a, costUsd: spent.costUsd });
    usage = addToTotals(usage, spent ?? a);
    if ((spent?.costUsd ?? a.costUsd) === null && (a.inputTokens ?? 0) + (a.outputTokens ?? 0) > 0) unpricedModel ??= a.agentModel ?? "(unknown model)";
    const tracked = states.get(nodeKey(a.nodeId, a.iteration));
    if (!tracked) continue;
    tracked.lastAttempt = Math.max(tracked.lastAttempt, a.attempt);
    if (a.state === "failed" && !freshBudget) tracked.failures++;
    if (a.state === "abandoned" && !freshBudget && diedUnder(a.errorJson)) tracked.abandons++;
  }
  if (repriced.length > 0 && !finished)
    await o.db.write("priceAttempts", async (q) =>
      attemptRows.setAttemptCosts(
        q,
        repriced.map((r) => ({ ...r.attempt, costUsd: r.costUsd })),
      ),
    );
  const loops = new Map(loopRows.map((r) => [r.ralphId, { iteration: r.iteration, done: r.done }]));
  const finishedIds = new Set(nodes.filter((n) => n.state === "finished" || n.state === "skipped").map((n) => n.nodeId));
  keepCurrentIterations(states);
  return {
    runId,
    ownerId: o.ownerId,
    input,
    storedInput,
    rootDir,
    resumed,
    alreadyFinished: Boolean(finished),
    states,
    loops,
    outputKeys,
    outputRows,
    abandoned,
    finishedIds,
    budget,
    usage,
    unpricedModel,
    cancelRequested: Boolean(cancelRequested),
    storedName,
    traceParent,
  };
}
