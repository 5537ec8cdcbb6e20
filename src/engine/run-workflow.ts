/**
 * runWorkflow: render -> decide -> act, until nothing is left. Each task's state lives in
 * SQLite before and after its work; memory only mirrors what this process wrote, so a
 * crash at any point is repaired by resume.
 */
import { heartbeatRun, setRunFields, updateRun } from "../db/adapters/runs.ts";
import { setLoopState } from "../db/adapters/ralph.ts";
import { upsertNode } from "../db/adapters/nodes.ts";
import { readOutputRow, readOutputRows, type OutputTableInfo } from "../db/output-tables.ts";
import { normalizeRow, stripBookkeeping as strip, type OutputRow } from "../db/snapshot.ts";
import { errorToJson, SmithersError } from "../errors/index.ts";
import { nodeKey, render, type Plan, type PlanTask } from "../jsx/index.ts";
import { runAttempt } from "./attempt.ts";
import { buildCtx } from "./ctx.ts";
import { openEventBus, type EventBus } from "./event-bus.ts";
import type { SmithersEvent } from "./events.ts";
import { ACTIVE_OWNERS, newOwnerId, setupRun, type RunSetup, type TrackedNode } from "./run-setup.ts";
import { decide, DecideMemo, type Failure } from "./scheduler.ts";
import { DEFAULT_KEYFRAME_POLICY, FrameChain, FrameRecorder, type KeyframePolicy } from "./frames.ts";
import { frames as frameRows, type Drizzle } from "../db/index.ts";
import { Outbox } from "./outbox.ts";
import type { RunStatus } from "./states.ts";
import { DEFAULT_TASK_RETRY, HEARTBEAT_INTERVAL_MS } from "./constants.ts";
import type { SmithersWorkflow } from "./workflow.ts";


export type RunOptions = {
  input?: unknown;
  runId?: string;
  resume?: boolean;
  dbPath?: string;
  maxConcurrency?: number;
  signal?: AbortSignal;
  onEvent?: (event: SmithersEvent) => void;
  workflowPath?: string;
  /** The owner id to run under; a supervisor passes the id it claimed the run with. */
  ownerId?: string;
  /** When frames are stored whole instead of as deltas (default: adaptive, on multiples of 50). */
  keyframes?: Partial<KeyframePolicy>;
};

export type RunResult = {
  runId: string;
  status: RunStatus;
  output?: unknown;
  error?: SmithersError;
};

/** Delay before the next attempt after `failures` failures: the error's retryAfterMs, else exponential backoff. */
export function retryDelay(policy: PlanTask["retryPolicy"], failures: number, retryAfterMs?: number): number {
  if (retryAfterMs !== undefined) return Math.max(0, retryAfterMs);
  const pick = (v: number | undefined, fallback: number) => (typeof v === "number" && Number.isFinite(v) ? v : fallback);
  const initial = pick(policy?.initialDelayMs, DEFAULT_TASK_RETRY.initialDelayMs);
  const max = pick(policy?.maxDelayMs, DEFAULT_TASK_RETRY.maxDelayMs);
  const factor = pick(policy?.factor, DEFAULT_TASK_RETRY.factor);
  return Math.max(0, Math.min(initial * factor ** Math.max(0, failures - 1), max));
}

function failureError(failure: Failure | undefined, lastErrors: Map<string, SmithersError>): SmithersError {
  if (failure?.kind === "loop-max") {
    return new SmithersError("LOOP_MAX_REACHED", `Loop "${failure.loop.loopId}" reached maxIterations (${failure.loop.maxIterations}) without meeting its until condition`, {
      loopId: failure.loop.loopId,
    });
  }
  if (failure?.kind === "stuck") {
    return new SmithersError("INVALID_WORKFLOW", "Nothing can run: every remaining task waits on a dependsOn that can never finish");
  }
  if (failure?.kind === "task") {
    const key = nodeKey(failure.task.nodeId, failure.task.iteration);
    return lastErrors.get(key) ?? new SmithersError("TASK_FAILED", `Task "${failure.task.nodeId}" failed`, { nodeId: failure.task.nodeId });
  }
  return new SmithersError("TASK_FAILED", "The run failed");
}

class Run {
  private readonly running = new Map<string, Promise<void>>();
  private readonly lastErrors = new Map<string, SmithersError>();
  private membership = new Map<string, string>();
  private plan: Plan | undefined;
  /** `tableKey\0nodeId` of every output the last render looked up. */
  private reads = new Set<string>();
  /** Something the last render could have seen changed (a row it read, a loop), so the tree must be rendered again. */
  private renderStale = true;
  /** Carried between decide() calls: states here only move forward (see DecideMemo). */
  private readonly memo = new DecideMemo();
  private failure: SmithersError | undefined;
  /** Aborted by the caller's signal: the run ends `cancelled`. */
  private readonly abort = new AbortController();
  /** Aborted on cancel or failure: stops the attempts in flight. */
  private readonly stop = new AbortController();
  private wake: (() => void) | undefined;
  private lost = false;

  constructor(
    private readonly wf: SmithersWorkflow,
    private readonly s: RunSetup,
    private readonly db: ReturnType<SmithersWorkflow["dbFor"]>,
    private readonly bus: EventBus,
    private readonly frames: FrameRecorder,
    private readonly options: RunOptions,
    private readonly now: () => number,
  ) {}

  /** Frames waiting for the next transaction (see Outbox). */
  private readonly frameBox = new Outbox<frameRows.NewFrame>();

  /**
   * Stages a frame when the plan or a task state changed since the last one. It is stored by the
   * next transaction the run commits, together with the staged events.
   */
  private commitFrame(plan: Plan): void {
    const frame = this.frames.next(plan, (key) => this.s.states.get(key)?.state, this.now());
    if (!frame) return;
    this.frameBox.push(frame);
    this.emit({ type: "FrameCommitted", frameNo: frame.frameNo, encoding: frame.encoding });
  }

  /** Stages an event: stored with the run's next transaction, heard by listeners once committed. */
  emit(event: Omit<SmithersEvent, "runId" | "timestampMs">): void {
    this.bus.stage({ ...event, runId: this.s.runId, timestampMs: this.now() });
  }

  /** Stages an event inside an open transaction: it commits or rolls back with it. */
  private emitInTransaction(event: Omit<SmithersEvent, "runId" | "timestampMs">): void {
    this.bus.stageInTransaction({ ...event, runId: this.s.runId, timestampMs: this.now() });
  }

  /** Inside any transaction of the run: stores the staged frames and events with it. */
  private readonly journal = (d: Drizzle): void => {
    this.frameBox.writeIn(this.db, (rows) => {
      for (const f of rows) frameRows.insertFrame(d, f);
    });
    this.bus.writeStagedIn(d);
  };

  /** Stores what is staged in a transaction of its own (when no other transaction is coming). */
  private async flushJournal(): Promise<void> {
    if (this.frameBox.size > 0 || this.bus.stagedCount > 0) await this.db.withTransaction("journal", this.journal);
  }

  private iterationOf = (nodeId: string) => {
    const loopId = this.membership.get(nodeId);
    return loopId ? (this.s.loops.get(loopId)?.iteration ?? 0) : 0;
  };

  private activeIteration(): number {
    const loop = this.plan?.loops.find((l) => !this.s.loops.get(l.loopId)?.done);
    if (loop) return this.s.loops.get(loop.loopId)?.iteration ?? 0;
    const open = [...this.s.loops.values()].filter((l) => !l.done).map((l) => l.iteration);
    return open.length > 0 ? Math.max(...open) : 0;
  }

  /**
   * Renders until what the ctx was built from matches the plan: the node->loop map, and the set
   * of output tables (a custom table first named by `output=` has its rows loaded, then the
   * tree is rendered again). A second pass at most, in practice.
   */
  private async renderPlan(): Promise<Plan> {
    // The build function is a pure function of ctx: if nothing it read changed, the tree is the same.
    if (!this.renderStale && this.plan) return this.plan;
    for (let pass = 0; ; pass++) {
      const tablesBefore = this.wf.registry.all().length;
      const reads = new Set<string>();
      const ctx = buildCtx({
        runId: this.s.runId,
        input: this.s.input,
        snapshot: this.s.snapshot,
        registry: this.wf.registry,
        iteration: this.activeIteration(),
        iterations: Object.fromEntries([...this.s.loops].map(([id, l]) => [id, l.iteration])),
        iterationOf: this.iterationOf,
        onRead: (tableKey, nodeId) => reads.add(`${tableKey}\0${nodeId}`),
      });
      const plan = render(this.wf.build(ctx), this.s.loops);
      this.reads = reads;
      const membership = new Map(plan.tasks.filter((t) => t.loopId).map((t) => [t.nodeId, t.loopId!]));
      for (const task of plan.tasks) this.resolve(task);
      const newTables = this.wf.registry.all().slice(tablesBefore);
      for (const info of newTables) {
        const rows = await this.db.read("loadOutputs", (d) => readOutputRows(d, info, this.s.runId).map(normalizeRow));
        this.s.snapshot[info.key] = rows;
        this.s.snapshot[info.tableName] = rows;
      }
      const stable =
        newTables.length === 0 && membership.size === this.membership.size && [...membership].every(([k, v]) => this.membership.get(k) === v);
      this.membership = membership;
      this.plan = plan;
      if (stable || pass >= 2) {
        this.renderStale = false;
        return plan;
      }
    }
  }

  private resolve(task: PlanTask): OutputTableInfo {
    const info = this.wf.registry.resolve(task.output, task.outputSchema);
    if (task.loopId && !info.hasIteration) {
      throw new SmithersError("CUSTOM_TABLE_INVALID", `Task "${task.nodeId}" runs in a loop but its table "${info.tableName}" has no iteration column`, {
        nodeId: task.nodeId,
        table: info.tableName,
      });
    }
    return info;
  }

  private tracked(task: PlanTask): TrackedNode {
    const key = nodeKey(task.nodeId, task.iteration);
    let t = this.s.states.get(key);
    if (!t) this.s.states.set(key, (t = { state: "pending", lastAttempt: 0, failures: 0 }));
    return t;
  }

  private remember(info: OutputTableInfo, row: Record<string, unknown>): void {
    const rows = (this.s.snapshot[info.key] ??= []);
    this.s.snapshot[info.tableName] = rows;
    const normalized = normalizeRow(row);
    if (this.reads.has(`${info.key}\0${normalized.nodeId}`)) this.renderStale = true;
    const at = rows.findIndex((r) => r.nodeId === normalized.nodeId && r.iteration === normalized.iteration);
    if (at >= 0) rows[at] = normalized;
    else rows.push(normalized);
  }

  private launch(task: PlanTask, info: OutputTableInfo): void {
    const key = nodeKey(task.nodeId, task.iteration);
    const t = this.tracked(task);
    const attempt = t.lastAttempt + 1;
    t.lastAttempt = attempt;
    t.state = "running";
    this.frames.markDirty(key);
    t.retryAtMs = undefined;
    const ids = { nodeId: task.nodeId, iteration: task.iteration, attempt };
    // The node's new state and its leaving `running` happen in one synchronous step, so the
    // scheduler never sees it ready again while this attempt is still registered.
    const settle = (apply: () => void) => {
      apply();
      this.frames.markDirty(key);
      this.running.delete(key);
    };
    const settled = runAttempt({
      db: this.db,
      runId: this.s.runId,
      task,
      info,
      attempt,
      input: this.s.input,
      runSignal: this.stop.signal,
      now: this.now,
      canRetry: t.failures < task.retries,
      onToolCall: (e) => this.emit({ ...e, ...ids }),
      inStartTransaction: (d) => {
        this.emitInTransaction({ type: "NodeStarted", ...ids });
        this.journal(d);
      },
      inSettleTransaction: (d, outcome) => {
        if (outcome.kind === "finished") this.emitInTransaction({ type: "NodeFinished", ...ids, durationMs: outcome.durationMs });
        else if (outcome.kind === "cancelled") this.emitInTransaction({ type: "NodeCancelled", ...ids, durationMs: outcome.durationMs });
        else {
          this.emitInTransaction({ type: "NodeFailed", ...ids, durationMs: outcome.durationMs, error: errorToJson(outcome.error) });
          if (outcome.retryable) this.emitInTransaction({ type: "NodeRetrying", ...ids, attempt: attempt + 1 });
        }
        this.journal(d);
      },
    })
      .then(async (outcome) => {
        // The outcome, its events and the frames before it are committed: memory may follow.
        if (outcome.kind === "finished") {
          const row = outcome.row ?? (await this.db.read("readOutput", (d) => readOutputRow(d, info, { runId: this.s.runId, ...ids })));
          settle(() => {
            if (row) this.remember(info, row);
            t.state = "finished";
          });
        } else if (outcome.kind === "cancelled") {
          settle(() => (t.state = "cancelled"));
        } else {
          this.lastErrors.set(key, outcome.error);
          settle(() => {
            t.failures++;
            t.state = outcome.retryable ? "pending" : "failed";
            if (outcome.retryable) t.retryAtMs = this.now() + retryDelay(task.retryPolicy, t.failures, outcome.retryAfterMs);
          });
        }
      })
      .catch((error: unknown) => {
        // Storage failed under the attempt (or the run was taken over): this process can no longer vouch for the node.
        settle(() => {
          t.state = "failed";
          this.fail(error instanceof SmithersError ? error : new SmithersError("DB_WRITE_FAILED", String(error), { cause: error }));
        });
      })
      .finally(() => this.wake?.());
    this.running.set(key, settled);
  }

  /** Records the run's failure and stops the attempts still in flight (they end cancelled). */
  private fail(error: SmithersError): void {
    this.failure ??= error;
    this.stop.abort();
  }

  /** Performs the scheduler's actions; a `wait` is returned for the caller to sleep on after the frame commit. */
  private async act(plan: Plan): Promise<"progressed" | "done" | { untilMs: number | undefined }> {
    const actions = decide(plan, this.s.states, this.now(), this.options.maxConcurrency ?? Infinity, this.memo);
    const nowMs = this.now();
    for (const action of actions) {
      switch (action.type) {
        case "finish-run":
          return "done";
        case "fail-run":
          this.fail(failureError(action.failure, this.lastErrors));
          return "done";
        case "wait":
          return { untilMs: action.untilMs };
        case "start":
        case "retry":
          this.launch(action.task, this.resolve(action.task));
          break;
        case "skip": {
          const { task } = action;
          const info = this.resolve(task);
          await this.db.withTransaction("skipNode", (d) => {
            upsertNode(d, { runId: this.s.runId, nodeId: task.nodeId, iteration: task.iteration, state: "skipped", updatedAtMs: nowMs, outputTable: info.tableName, label: task.label ?? null });
            this.emitInTransaction({ type: "NodeSkipped", nodeId: task.nodeId, iteration: task.iteration });
            this.journal(d);
          });
          this.tracked(task).state = "skipped";
          this.frames.markDirty(task.key);
          break;
        }
        case "advance-loop":
        case "finish-loop": {
          const { loop } = action;
          const next = action.type === "advance-loop" ? { iteration: loop.iteration + 1, done: false } : { iteration: loop.iteration, done: true };
          await this.db.withTransaction("loopState", (d) => {
            setLoopState(d, { runId: this.s.runId, ralphId: loop.loopId, ...next, updatedAtMs: nowMs });
            this.emitInTransaction({ type: action.type === "advance-loop" ? "LoopAdvanced" : "LoopFinished", loopId: loop.loopId, iteration: next.iteration });
            this.journal(d);
          });
          this.s.loops.set(loop.loopId, next);
          this.renderStale = true;
          break;
        }
      }
    }
    return "progressed";
  }

  private sleep(wakeAtMs: number | undefined): Promise<void> {
    return new Promise((resolve) => {
      const timer = wakeAtMs === undefined ? undefined : setTimeout(resolve, Math.max(0, wakeAtMs - this.now()));
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** Another process claimed the run (its heartbeat CAS failed): stop without touching the run row. */
  lostOwnership(): void {
    this.lost = true;
    this.fail(new SmithersError("RUN_OWNED", `Run "${this.s.runId}" was taken over by another process`, { runId: this.s.runId }));
    this.wake?.();
  }

  cancel(): void {
    this.abort.abort();
    this.stop.abort();
    this.wake?.();
  }

  /** The result of a run that had already finished, read back without running or writing anything. */
  async readBack(): Promise<RunResult> {
    await this.renderPlan();
    return { runId: this.s.runId, status: "finished", output: this.result() };
  }

  async execute(): Promise<RunResult> {
    const { runId } = this.s;
    try {
      let named = false;
      while (!this.abort.signal.aborted && !this.failure) {
        let plan: Plan;
        try {
          plan = await this.renderPlan();
        } catch (error) {
          throw error instanceof SmithersError ? error : new SmithersError("INVALID_WORKFLOW", `Rendering the workflow failed: ${(error as Error)?.message ?? String(error)}`, { cause: error });
        }
        if (!named) {
          named = true;
          if (plan.workflowName !== this.wf.name) await updateRun(this.db, runId, { workflowName: plan.workflowName });
        }
        const step = await this.act(plan);
        this.commitFrame(plan);
        if (step === "done") break;
        if (step !== "progressed") {
          // Nothing in flight will commit soon (a backoff): store what is staged now.
          if (this.running.size === 0) await this.flushJournal();
          await this.sleep(step.untilMs);
        }
      }
    } catch (error) {
      this.fail(error instanceof SmithersError ? error : new SmithersError("DB_WRITE_FAILED", `The run could not record its progress: ${(error as Error)?.message ?? String(error)}`, { cause: error }));
    }
    await Promise.all(this.running.values());
    if (this.lost) return { runId, status: "failed", error: this.failure }; // the new owner writes from here on
    // The states in-flight attempts settled into after a failure or cancel belong in the last frame.
    if (this.plan) this.commitFrame(this.plan);
    const finishedAtMs = this.now();
    const status: RunStatus = this.abort.signal.aborted ? "cancelled" : this.failure ? "failed" : "finished";
    const error = status === "failed" && this.failure ? errorToJson(this.failure) : undefined;
    await this.db.withTransaction("finishRun", (d) => {
      setRunFields(d, runId, { status, finishedAtMs, ...(error ? { errorJson: JSON.stringify(error) } : {}) });
      const type = status === "cancelled" ? "RunCancelled" : status === "failed" ? "RunFailed" : "RunFinished";
      this.emitInTransaction({ type, status, ...(error ? { error } : {}) });
      this.journal(d);
    });
    if (status === "cancelled") return { runId, status };
    if (status === "failed") return { runId, status, error: this.failure };
    return { runId, status, output: this.result() };
  }

  /** The `output` schema's latest row when the workflow has one, else the last finished task's row. */
  private result(): unknown {
    const declared = this.wf.registry.byKey.get("output");
    if (declared) {
      const rows = this.s.snapshot[declared.key] ?? [];
      return strip(rows.reduce<OutputRow | undefined>((best, r) => (!best || r.iteration >= best.iteration ? r : best), undefined));
    }
    const tasks = this.plan?.tasks ?? [];
    for (let i = tasks.length - 1; i >= 0; i--) {
      const task = tasks[i]!;
      if (this.s.states.get(nodeKey(task.nodeId, task.iteration))?.state !== "finished") continue;
      const info = this.wf.registry.resolve(task.output, task.outputSchema);
      return strip(this.s.snapshot[info.key]?.find((r) => r.nodeId === task.nodeId && r.iteration === task.iteration));
    }
    return undefined;
  }
}

/**
 * Runs (or resumes) a workflow to completion and resolves with its status. Bad input,
 * a changed input on resume, or an unknown run reject with a SmithersError; failures
 * during the run resolve with `status: "failed"` and the error.
 */
export async function runWorkflow(workflow: SmithersWorkflow, options: RunOptions = {}): Promise<RunResult> {
  const now = () => Date.now();
  const db = workflow.dbFor(options.dbPath);
  const ownerId = options.ownerId ?? newOwnerId();
  ACTIVE_OWNERS.add(ownerId); // before the owner id is written, so a same-process resume sees it alive
  try {
    const setup = await setupRun({
      db,
      registry: workflow.registry,
      workflowName: workflow.name,
      workflowPath: options.workflowPath,
      runId: options.runId,
      input: options.input,
      resume: options.resume,
      ownerId,
      nowMs: now(),
    });
    const bus = await openEventBus({ db, runId: setup.runId });
    const onEvent = options.onEvent;
    if (onEvent) bus.on((event) => onEvent(event as unknown as SmithersEvent));
    const policy = { interval: options.keyframes?.interval ?? DEFAULT_KEYFRAME_POLICY.interval, mode: options.keyframes?.mode ?? DEFAULT_KEYFRAME_POLICY.mode };
    const recorder = new FrameRecorder(await FrameChain.open(db, setup.runId, policy), (task) => workflow.registry.resolve(task.output, task.outputSchema).tableName);
    const run = new Run(workflow, setup, db, bus, recorder, options, now);
    if (setup.alreadyFinished) return await run.readBack();
    run.emit({ type: setup.resumed ? "RunResumed" : "RunStarted", status: "running" });
    const heartbeat = setInterval(() => {
      heartbeatRun(db, setup.runId, ownerId, now()).then(
        (owned) => owned || run.lostOwnership(),
        () => undefined, // a missed beat is harmless; the next one retries
      );
    }, HEARTBEAT_INTERVAL_MS);
    heartbeat.unref?.();
    const onAbort = () => run.cancel();
    if (options.signal?.aborted) onAbort();
    options.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      return await run.execute();
    } finally {
      clearInterval(heartbeat);
      options.signal?.removeEventListener("abort", onAbort);
      await db.checkpoint();
    }
  } finally {
    ACTIVE_OWNERS.delete(ownerId);
  }
}
