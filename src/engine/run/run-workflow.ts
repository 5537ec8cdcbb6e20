/**
 * runWorkflow: sets a run up (or resumes it), then lets a Run execute it step by step, with a
 * heartbeat while it runs and cancellation from the caller's AbortSignal.
 */
import { resolve } from "node:path";
import { checkDurability, MISSED_BEATS_BEFORE_STALE, runs, STALE_RUN_THRESHOLD_MS, type Durability, type SmithersDb } from "../../db/index.ts";
import { SmithersError } from "../../errors/index.ts";
import { EventBus, openEventBus } from "./event-bus.ts";
import type { SmithersEvent } from "../core/index.ts";
import { setupRun } from "./run-setup.ts";
import { ACTIVE_OWNERS, newOwnerId } from "../core/index.ts";
import { DEFAULT_KEYFRAME_POLICY, FrameChain, FrameRecorder, type KeyframePolicy } from "../history/index.ts";
import { GC_AFTER_TASKS, HEARTBEAT_INTERVAL_MS, type Clock } from "../core/index.ts";
import { Run, type RunResult } from "./run.ts";
import type { SmithersWorkflow } from "../workflow/index.ts";
import { checkPricing, killLeftoverGroup, type ModelPricing } from "../../agents/index.ts";
import { checkBudget, checkLimits, type Limits } from "../core/index.ts";
import { enqueueRun, type EnqueuedRun } from "./enqueue.ts";
import { QUEUE_START_OPTIONS, type QueueStartOptions } from "./start-options.ts";
import { checkCode } from "./code-check.ts";
import { codeHashOf } from "../workflow/index.ts";
import type { StartChildRun } from "../waits/index.ts";
import { isTraceparent, traceParentOfNewRun, traceRunIfEnabled } from "../telemetry/index.ts";

export type { RunResult } from "./run.ts";
export type { EnqueuedRun } from "./enqueue.ts";

export type RunOptions = QueueStartOptions & {
  /**
   * Hand the run to a worker instead of running it here: the input is checked, a request is written
   * to the database's queue, and the call resolves with `{ runId, status: "queued" }`. Needs
   * `workflowPath` (the file workers load); takes only input, runId, resume and dbPath besides,
   * and the queue's own options (priority, tenant, idempotencyKey, idempotencyWindowMs, debounce).
   */
  enqueue?: boolean;
  input?: unknown;
  runId?: string;
  resume?: boolean;
  dbPath?: string;
  maxConcurrency?: number;
  signal?: AbortSignal;
  onEvent?: (event: SmithersEvent) => void;
  /** smithers-orchestrator's name for onEvent; given both, both hear every event. */
  onProgress?: (event: SmithersEvent) => void;
  workflowPath?: string;
  /** The run this one is a child of (set by `<Subflow>`); stored in `_smithers_runs.parent_run_id`. */
  parentRunId?: string;
  /** The owner id to run under; a supervisor passes the id it claimed the run with. */
  ownerId?: string;
  /**
   * A W3C traceparent (`00-<trace id>-<span id>-<flags>`) a new run's trace continues, stored with
   * the run (a worker passes the one a POST /runs request carried); without it, the caller's active
   * span or the trace derived from the run id. INVALID_OPTION when malformed.
   */
  traceParent?: string;
  /**
   * How often the run's heartbeat is written (default 5 s, at most 7.5 s). A supervisor or worker
   * takes a run over once its heartbeat is older than its threshold (30 s by default) and, for a
   * worker, 4 of these beats.
   */
  heartbeatMs?: number;
  /**
   * How long a task body stopped by its timeout, a cancel or the run failing may take to settle
   * before its attempt is recorded `abandoned` (its body may still be running) and the run moves
   * on; a retry never starts before then. Default 10 s.
   */
  graceMs?: number;
  /** A `<Timer>` due within this many ms is waited for in this process; a later one ends the run `waiting-timer` (default 5 s). */
  waitInPlaceMs?: number;
  /** Aborting this ends every grace period in progress at once: stopped bodies still running are abandoned now. */
  abandonSignal?: AbortSignal;
  /**
   * The run's root directory: the working directory of its tasks (`ctx.cwd`, an agent's `cwd`)
   * outside a `<Worktree>`, what a relative `<Worktree path>` resolves against, and whose git
   * repository worktrees are added to. Default: process.cwd().
   */
  rootDir?: string;
  /** When frames are stored whole instead of as deltas (default: adaptive, on multiples of 50). */
  keyframes?: Partial<KeyframePolicy>;
  /**
   * What this run's commits survive: "process" (kill -9) or "power" (also power loss). Default:
   * the database's (createSmithers' `durability`, else "process"). The connection is switched for
   * this run and switched back when it ends; runs sharing the connection at that moment share it.
   */
  durability?: Durability;
  /**
   * Spend limit in US dollars: once the run's agent attempts together cost this much, no new
   * agent attempt starts and the run ends `failed` with BUDGET_EXCEEDED (attempts in flight
   * finish). Stored on the run: a resume keeps it unless given a new one (raise it to go on).
   * Default: createSmithers' `maxCostUsd`, else none.
   */
  maxCostUsd?: number;
  /** Token limit (input, cached included, plus output), kept like maxCostUsd. */
  maxTokens?: number;
  /** Prices by model id (US dollars per million tokens) for agents that report tokens but no cost. Default: createSmithers' `pricing`. */
  pricing?: ModelPricing;
  /**
   * Resume although the workflow's code changed since the run ran (its recorded hash of the
   * workflow file and the local modules it imports differs): without it such a resume rejects
   * with WORKFLOW_CHANGED naming the tasks whose definitions changed. Finished tasks are kept
   * either way; the change is recorded as a WorkflowCodeChanged event.
   */
  allowCodeChange?: boolean;
  /**
   * The time the run reads and sets its timers with (timers, retry backoffs, task timeouts, grace
   * periods): the system's by default. Given one, its heartbeats are stamped by it too instead of by
   * the database's clock, so a virtual clock (smithers-workflows/testing) is the run's only time.
   * A `<Subflow>`'s child run gets the same clock.
   */
  clock?: Clock;
  /**
   * Limits by key over createSmithers' `limits` (option by option): what `--limit` sets for a
   * process. Checked like them (INVALID_LIMIT).
   */
  limits?: Limits;
};

/** The slowest heartbeat a run may ask for: MISSED_BEATS_BEFORE_STALE of them fit in the default stale threshold. */
const MAX_HEARTBEAT_MS = STALE_RUN_THRESHOLD_MS / MISSED_BEATS_BEFORE_STALE;

/** Runs holding a durability on a connection, and the mode it had before the first of them. */
const durabilityHolds = new WeakMap<SmithersDb, { runs: number; before: Durability }>();

/**
 * Switches `db` to `durability` for a run; the returned function gives it back, and the last run
 * holding the connection restores the mode it had before the first (runs overlapping on one
 * connection, as in a worker, keep the mode until all of them ended).
 */
async function holdDurability(db: SmithersDb, durability: Durability): Promise<() => Promise<void>> {
  const hold = durabilityHolds.get(db) ?? { runs: 0, before: db.durability };
  hold.runs++;
  durabilityHolds.set(db, hold);
  if (db.durability !== durability) await db.setDurability(durability);
  return async () => {
    if (--hold.runs > 0) return;
    durabilityHolds.delete(db);
    if (db.durability !== hold.before) await db.setDurability(hold.before);
  };
}

/**
 * Runs (or resumes) a workflow to completion and resolves with its status. Bad input,
 * a changed input on resume, or an unknown run reject with a SmithersError; failures
 * during the run resolve with `status: "failed"` and the error.
 *
 * A run that continues as a new one (`<ContinueAsNew>`, `<Loop continueAsNewEvery>`) is followed:
 * the result is the last run of the chain's (its `runId` is that run's id, never `continued`).
 * Resuming a run that continued resumes the last run of its chain.
 */
export function runWorkflow(workflow: SmithersWorkflow, options: RunOptions & { enqueue: true }): Promise<EnqueuedRun>;
export function runWorkflow(workflow: SmithersWorkflow, options?: RunOptions): Promise<RunResult>;
export async function runWorkflow(workflow: SmithersWorkflow, options: RunOptions = {}): Promise<RunResult | EnqueuedRun> {
  if (options.enqueue) return enqueueRun(workflow, options);
  const queueOnly = QUEUE_START_OPTIONS.filter((key) => options[key] !== undefined);
  if (queueOnly.length > 0)
    throw new SmithersError("INVALID_OPTION", `${queueOnly.join(", ")} order a queued start: pass enqueue: true with it`, { options: queueOnly });
  if (options.limits !== undefined) checkLimits(options.limits);
  let runId = options.runId;
  if (options.resume && runId !== undefined) {
    const end = await runs.getChainEnd(workflow.dbFor(options.dbPath), runId);
    if (end) runId = end.runId;
  }
  // One owner for the whole chain: a successor is created owned by the run that continued.
  const ownerId = options.ownerId ?? newOwnerId();
  let result = await runOnce(workflow, { ...options, runId, ownerId }, false);
  while (result.status === "continued" && result.nextRunId) {
    // The successor exists (same owner, status running) since the transaction that ended this run.
    result = await runOnce(workflow, { ...options, ownerId, runId: result.nextRunId, resume: true, input: undefined }, true);
  }
  return result;
}

/** One run of the chain; `successor`: a run this process just created by continuing the previous one. */
async function runOnce(workflow: SmithersWorkflow, options: RunOptions, successor: boolean): Promise<RunResult> {
  const { graceMs } = options;
  if (graceMs !== undefined && !(typeof graceMs === "number" && graceMs >= 0)) {
    throw new SmithersError("INVALID_OPTION", `graceMs must be a number of milliseconds >= 0 (or Infinity), got ${String(graceMs)}`);
  }
  const { heartbeatMs = HEARTBEAT_INTERVAL_MS } = options;
  // Several beats must fit in the default stale threshold, which `up --resume` and supervise judge owners by.
  if (!(typeof heartbeatMs === "number" && heartbeatMs > 0 && heartbeatMs <= MAX_HEARTBEAT_MS)) {
    throw new SmithersError("INVALID_OPTION", `heartbeatMs must be a number of milliseconds > 0 and at most ${MAX_HEARTBEAT_MS}, got ${String(heartbeatMs)}`);
  }
  const budget = checkBudget(options);
  const pricing = checkPricing(options.pricing) ?? workflow.spend?.pricing;
  const { clock } = options;
  const now = clock ? () => clock.now() : Date.now;
  const asked = options.durability ?? workflow.durability;
  const durability = asked === undefined ? undefined : checkDurability(asked);
  const db = workflow.dbFor(options.dbPath);
  const releaseDurability = durability === undefined ? undefined : await holdDurability(db, durability);
  const ownerId = options.ownerId ?? newOwnerId();
  // The code it runs with: the file it was loaded from, else the module that made the workflow.
  const codePath = options.workflowPath ?? workflow.sourcePath;
  const workflowHash = successor || !codePath ? undefined : codeHashOf(codePath);
  const codeChange = options.resume && !successor ? await checkCode(workflow, db, options.runId, workflowHash, Boolean(options.allowCodeChange)) : undefined;
  ACTIVE_OWNERS.add(ownerId); // before the owner id is written, so a same-process resume sees it alive
  try {
    // With a tracer registered, a new run stores the trace it belongs to (nothing loaded or awaited otherwise).
    if (options.traceParent !== undefined && !(typeof options.traceParent === "string" && isTraceparent(options.traceParent))) {
      throw new SmithersError(
        "INVALID_OPTION",
        `traceParent must be a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>); got ${JSON.stringify(options.traceParent)}`,
      );
    }
    const given = options.resume ? undefined : options.traceParent;
    const capture = options.resume || given !== undefined ? undefined : traceParentOfNewRun();
    const traceParentOf = given !== undefined ? () => given : capture ? await capture : undefined;
    const setup = await setupRun({
      db,
      registry: workflow.registry,
      workflowName: workflow.name,
      workflowPath: options.workflowPath,
      runId: options.runId,
      input: options.input,
      resume: options.resume,
      parentRunId: options.parentRunId,
      rootDir: options.rootDir === undefined ? undefined : resolve(options.rootDir),
      ownerId,
      // The database's clock (unless one was injected): the run's first heartbeat, and its previous owner's judged by it.
      nowMs: clock ? clock.now() : await runs.databaseNow(db),
      ...(heartbeatMs === HEARTBEAT_INTERVAL_MS ? {} : { heartbeatMs }),
      budget,
      ...(workflow.spend ? { defaultBudget: workflow.spend.budget } : {}),
      ...(pricing ? { pricing } : {}),
      ...(workflowHash ? { workflowHash } : {}),
      ...(traceParentOf ? { traceParentOf } : {}),
    });
    // A new run's journals start empty, and a finished run's are only read back: nothing to look up.
    const continues = setup.resumed && !setup.alreadyFinished;
    const bus = continues ? await openEventBus({ db, runId: setup.runId }) : new EventBus({ db, runId: setup.runId });
    for (const listener of [options.onEvent, options.onProgress]) if (listener) bus.on((event) => listener(event as unknown as SmithersEvent));
    // Spans only when an OpenTelemetry SDK is registered; otherwise nothing is loaded or awaited.
    const tracing = traceRunIfEnabled(bus, { runId: setup.runId, workflow: () => workflow.name, traceParent: setup.traceParent });
    const stopTracing = tracing ? await tracing : undefined;
    const policy = { interval: options.keyframes?.interval ?? DEFAULT_KEYFRAME_POLICY.interval, mode: options.keyframes?.mode ?? DEFAULT_KEYFRAME_POLICY.mode };
    const recorder = new FrameRecorder(continues ? await FrameChain.open(db, setup.runId, policy) : FrameChain.start(setup.runId, policy), (task) =>
      task.mode === "timer" ? "" : workflow.registry.resolve(task.output, task.outputSchema).tableName,
    );
    // The rows a large run's resume read back and the frames it rebuilt its chain from are garbage now (see GC_AFTER_TASKS).
    if (continues && setup.states.size >= GC_AFTER_TASKS) Bun.gc(true);
    // A child run keeps its parent's clock and the process's limits (--limit).
    const inherited = { ...(clock ? { clock } : {}), ...(options.limits ? { limits: options.limits } : {}) };
    const startChildRun: StartChildRun = clock || options.limits ? (child, o) => runWorkflow(child, { ...o, ...inherited }) : runWorkflow;
    const run = new Run(workflow, setup, db, bus, recorder, { ...options, ...(pricing ? { pricing } : {}), startChildRun }, now);
    if (setup.alreadyFinished) return await run.readBack();
    run.emit({ type: setup.resumed && !successor ? "RunResumed" : "RunStarted", status: "running" });
    if (codeChange) {
      const { oldHash, newHash, changed, added, removed } = codeChange;
      run.emit({ type: "WorkflowCodeChanged", oldHash, newHash, changed, added, removed });
    }
    for (const a of setup.abandoned) {
      // An agent CLI the dead process had started may still run (its own process group): end it
      // before the retry starts another beside it.
      const killed = a.agentPid !== null && killLeftoverGroup(a.agentPid, a.agentPidStart ?? undefined);
      const ids = { nodeId: a.nodeId, iteration: a.iteration, attempt: a.attempt };
      run.emit({ type: "NodeAbandoned", ...ids, reason: "process-died", ...(killed ? { killedAgentPid: a.agentPid! } : {}) });
    }
    const heartbeat = setInterval(() => {
      runs.heartbeat(db, setup.runId, ownerId, clock?.now()).then(
        ({ owned, cancelRequested }) => {
          if (!owned) run.lostOwnership();
          else if (cancelRequested) run.cancel(); // `smithers cancel` from another process
        },
        () => undefined, // a missed beat is harmless; the next one retries
      );
    }, heartbeatMs);
    if (setup.cancelRequested) run.cancel(); // asked to stop before this process took it over
    heartbeat.unref?.();
    const onAbort = () => run.cancel();
    if (options.signal?.aborted) onAbort();
    options.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      return await run.execute();
    } finally {
      clearInterval(heartbeat);
      stopTracing?.();
      options.signal?.removeEventListener("abort", onAbort);
      // The WAL is folded into the file once the caller has the run's result (the next turn of the
      // event loop), not before: the caller does not wait for housekeeping. close() and any later
      // operation on the database queue behind it; a failed or busy checkpoint loses nothing.
      setImmediate(() => void db.checkpoint().catch(() => undefined));
    }
  } finally {
    ACTIVE_OWNERS.delete(ownerId);
    await releaseDurability?.();
  }
}
