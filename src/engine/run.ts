/**
 * One executing run: render -> decide -> commit the step -> start the work, until nothing is
 * left. A step is one transaction: the outcomes of attempts whose work ended (output rows,
 * attempt and node states), the attempts the scheduler starts next (node running + attempt row),
 * skips, the step's events and its frame. Work starts only after that commit (write before do),
 * and a task's output is committed before any task that depends on it starts. Memory mirrors
 * what the step writes; a crash loses at most the step in flight, which resume repairs. The
 * step that finds the run over commits with the run's final status.
 */
import {
  attempts as attemptRows,
  frames as frameRows,
  nodes,
  normalizeRow,
  ralph,
  readOutputKeys,
  readOutputRow,
  readOutputRowNow,
  loadOutputRows,
  runs,
  stripBookkeeping as strip,
  type Sql,
  type OutputTableInfo,
  type SmithersDb,
  type UsageTotals,
} from "../db/index.ts";
import type { AgentEvent, ModelPricing } from "../agents/index.ts";
import { addToTotals, budgetStop } from "./budget.ts";
import { describeThrown, errorJsonText, errorSummaryJson, safeStringify, SmithersError } from "../errors/index.ts";
import { nodeKey, render, withRenderContext, type CacheKeyContext, type Plan, type PlanNode, type PlanTask } from "../jsx/index.ts";
import { Waits } from "./waits.ts";
import {
  isPureAttempt,
  performAttempt,
  performPureAttempt,
  recordSettle,
  recordStart,
  settleOutcome,
  type AttemptInput,
  type AttemptResult,
} from "./attempt.ts";
import { ALL_NODES, buildCtx, OutputIndex } from "./ctx.ts";
import type { EventBus } from "./event-bus.ts";
import { runEndedEvent, type EventBody } from "./events.ts";
import type { FrameRecorder } from "./frames.ts";
import { Outbox } from "./outbox.ts";
import type { RunSetup, TrackedNode } from "./run-setup.ts";
import { decide, DecideMemo, failureIn, type Action, type ContinueFrom } from "./scheduler.ts";
import { describeFailure, failureError } from "./failure.ts";
import { createSuccessor } from "./continue-as-new.ts";
import { isWaiting, WAITING_STATUSES, type RunStatus, type WaitingStatus } from "./states.ts";
import {
  DEFAULT_STOP_GRACE_MS,
  MAX_TIMER_MS,
  OUTPUT_FLUSH_MS,
  OUTPUT_TEXT_MAX,
  PURE_BATCH_MAX_MS,
  PURE_BATCH_MAX_STEPS,
  TIMER_WAIT_IN_PLACE_MS,
  YIELD_EVERY_MS,
  WAIT_POLL_MS,
} from "./constants.ts";
import { retryBudget, retryDelay } from "./retry.ts";
import type { SmithersWorkflow } from "./workflow.ts";

export type RunResult = {
  runId: string;
  status: RunStatus;
  output?: unknown;
  error?: SmithersError;
  /** Status `continued`: the run that carries on (runWorkflow follows it; a result it returns is never `continued`). */
  nextRunId?: string;
  /** What the run's agent attempts consumed in all (every execution of it), when any reported usage. */
  usage?: UsageTotals;
};

export type RunSettings = {
  maxConcurrency?: number;
  /** How long a stopped task body may take to settle before its attempt is recorded `abandoned` (default 10 s). */
  graceMs?: number;
  /** Ends the grace periods in progress at once. */
  abandonSignal?: AbortSignal;
  /** A timer due within this many ms is waited for in the process (default TIMER_WAIT_IN_PLACE_MS, 5 s). */
  waitInPlaceMs?: number;
  /** Prices for agents that report tokens but no cost. */
  pricing?: ModelPricing;
};

/** A SQLite or PostgreSQL driver error, possibly wrapped (Drizzle's query error keeps it as `cause`). */
function isDatabaseError(error: unknown): boolean {
  for (let e = error, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const name = (e as { name?: unknown }).name;
    const code = (e as { code?: unknown }).code;
    if (name === "SQLiteError" || name === "PostgresError" || (typeof code === "string" && code.startsWith("SQLITE_"))) return true;
  }
  return false;
}

/**
 * What a run fails with when a step throws: a SmithersError as is, a database error as a failed
 * write, anything else as a fault of the engine itself (ENGINE_ERROR), never mistaken for storage.
 */
export function asRunError(error: unknown): SmithersError {
  if (SmithersError.is(error)) return error;
  if (isDatabaseError(error)) {
    return new SmithersError("DB_WRITE_FAILED", `The run could not record its progress: ${describeThrown(error)}`, { cause: error });
  }
  return new SmithersError("ENGINE_ERROR", `The engine failed: ${describeThrown(error)}`, { cause: error });
}

type Started = { task: PlanTask; tracked: TrackedNode; input: AttemptInput };
type Ended = Started & { result: AttemptResult };
type Event = EventBody;
type Write = (q: Sql) => void | Promise<void>;
/** What a step tells the run loop: step again at once, the run is over, or sleep until a time (or until work ends). */
type StepNext = "again" | "done" | { untilMs: number | undefined };

export class Run {
  /** Work in flight (a task body running). */
  private readonly working = new Set<Promise<void>>();
  /** Attempts whose work ended, waiting for the next step to commit their outcome. */
  private ended: Ended[] = [];
  private readonly lastErrors = new Map<string, SmithersError>();
  private membership = new Map<string, string>();
  private plan: Plan | undefined;
  /** `tableKey\0nodeId` of every output the last render looked up. */
  private reads = new Set<string>();
  /** Something the last render could have seen changed (a row it read, a loop): render again. */
  private renderStale = true;
  /** The last render read a node state (ctx.nodeState): states change every step, so each step renders again. */
  private readsStates = false;
  /** Ended attempts of custom tables whose stored row must be read back. */
  private readonly customRows: Ended[] = [];
  /** What ctx can read: which output rows exist, and the recent ones (others are read from SQLite). */
  private readonly index: OutputIndex;
  /**
   * Node ids with a finished or skipped iteration: what a dependsOn on an id that is not mounted
   * now asks (see decide), kept so the states of finished loop iterations can be dropped.
   */
  private readonly finishedIds = new Set<string>();
  /** The nodes waiting for the world: timers, decisions, answers, signals, child runs. */
  private readonly waits: Waits;
  /** Set when the scheduler found nothing to do but wait: the run ends with this status. */
  private suspended: WaitingStatus | undefined;
  /** When the suspended run must be looked at again: its earliest timer or timeout (stored on the run for the daemon). */
  private suspendedUntilMs: number | undefined;
  /** Set when the scheduler decided to continue as a new run: the run ends `continued`. */
  private continueFrom: ContinueFrom | undefined;
  /** Carried between decide() calls: states here only move forward (see DecideMemo). */
  private readonly memo = new DecideMemo();
  /** Frames waiting for the next transaction (see Outbox). */
  private readonly frameBox = new Outbox<frameRows.NewFrame>();
  /** Writes of the step that decided the run is over, committed with the run's final status. */
  private readonly carried: Write[] = [];
  /**
   * Steps that started only pure attempts (isPureAttempt), not committed yet: their writes, in
   * step order, go first in the next transaction. Nothing outside the engine acted on them, so a
   * crash before that commit loses nothing anyone saw; the run commits them before it starts
   * other work, sleeps or ends, and at least every PURE_BATCH_MAX_STEPS steps or PURE_BATCH_MAX_MS.
   */
  private batch: Write[] = [];
  private batchSteps = 0;
  private batchSinceMs = 0;
  private failure: SmithersError | undefined;
  /** Aborted by the caller's signal: the run ends `cancelled`. */
  private readonly abort = new AbortController();
  /** Aborted on cancel or failure: stops the attempts in flight. */
  private readonly stop = new AbortController();
  /** What the run's agent attempts consumed so far (stored attempts plus settled ones). */
  private usage: UsageTotals;
  private unpricedModel: string | undefined;
  /** Set when an agent attempt was held back by the run's budget: the run fails with it once nothing runs. */
  private budgetHeld: SmithersError | undefined;
  /** A step is between its render and its commit: agent output waits for that commit instead of a transaction of its own. */
  private stepping = false;
  private outputTimer: ReturnType<typeof setTimeout> | undefined;
  /** Agent text not yet staged as an event, per attempt (joined until the next flush, a tool call or the step). */
  private readonly textBuffers = new Map<string, { ids: { nodeId: string; iteration: number; attempt: number }; text: string }>();
  /** Nothing more runs: the run's last transaction is being written (late agent output is dropped). */
  private ending = false;
  private wake: (() => void) | undefined;
  /** A wake-up that came while the run was not asleep: the next sleep returns at once (no lost wake-up). */
  private wokenEarly = false;
  private lost = false;

  constructor(
    private readonly wf: SmithersWorkflow,
    private readonly s: RunSetup,
    private readonly db: SmithersDb,
    private readonly bus: EventBus,
    private readonly frames: FrameRecorder,
    private readonly settings: RunSettings,
    private readonly now: () => number,
  ) {
    if (s.outputRows) {
      // Rows cannot be read synchronously here: the index keeps every row of the run.
      this.index = new OutputIndex(() => undefined, { maxEntries: Number.POSITIVE_INFINITY, maxBytes: Number.POSITIVE_INFINITY });
      for (const [tableKey, rows] of Object.entries(s.outputRows)) for (const row of rows) this.index.addStored(tableKey, row);
    } else {
      this.index = new OutputIndex((tableKey, nodeId, iteration) => {
        const info = wf.registry.byKey.get(tableKey);
        return info && readOutputRowNow(db, info, { runId: s.runId, nodeId, iteration });
      });
    }
    for (const [tableKey, keys] of Object.entries(s.outputKeys)) for (const k of keys) this.index.addKey(tableKey, k.nodeId, k.iteration);
    for (const id of s.finishedIds) this.finishedIds.add(id);
    this.usage = s.usage;
    this.unpricedModel = s.unpricedModel;
    this.waits = new Waits({
      runId: s.runId,
      db,
      now,
      tracked: (task) => this.tracked(task),
      resolve: (task) => this.resolve(task),
      markDirty: (key) => this.frames.markDirty(key),
      remember: (info, row) => this.remember(info, row),
      emitInTransaction: (event) => this.emitInTransaction(event),
      failed: (key, error) => this.noteError(key, error),
      done: (nodeId) => this.finishedIds.add(nodeId),
    });
    // Timers are left to the scheduler (see resolveWaits); a subflow may wait in any of these states.
    for (const [key, t] of s.states) if (isWaiting(t.state)) this.waits.waiting.add(key);
  }

  /** Stages an event: stored with the run's next transaction, heard by listeners once committed. */
  emit(event: Event): void {
    this.bus.stage({ ...event, runId: this.s.runId, timestampMs: this.now() });
  }

  /** Stages an event inside an open transaction: it commits or rolls back with it. */
  private emitInTransaction(event: Event): void {
    this.bus.stageInTransaction({ ...event, runId: this.s.runId, timestampMs: this.now() });
  }

  /** First in every transaction of the run: RUN_OWNED (and nothing written) once another process owns it. */
  private async checkOwner(q: Sql): Promise<void> {
    if (!(await runs.ownsRun(q, this.s.runId, this.s.ownerId))) {
      throw new SmithersError("RUN_OWNED", `Run "${this.s.runId}" was taken over by another process`, { runId: this.s.runId });
    }
  }

  /** Inside any transaction of the run: stores the staged frames and events with it. */
  private readonly journal = async (q: Sql): Promise<void> => {
    await this.frameBox.writeIn(this.db, async (rows) => await frameRows.insertFrames(q, rows));
    await this.bus.writeStagedIn(q);
  };

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
   * tree is rendered again). The build function is a pure function of ctx, so while nothing it
   * read changed the last plan is reused.
   */
  private async renderPlan(): Promise<Plan> {
    if (!this.renderStale && this.plan) return this.plan;
    for (let pass = 0; ; pass++) {
      const tablesBefore = this.wf.registry.all().length;
      const reads = new Set<string>();
      let readsStates = false;
      const ctx = buildCtx({
        runId: this.s.runId,
        input: this.s.input,
        registry: this.wf.registry,
        iteration: this.activeIteration(),
        iterations: Object.fromEntries([...this.s.loops].map(([id, l]) => [id, l.iteration])),
        iterationOf: this.iterationOf,
        onRead: (tableKey, nodeId) => reads.add(`${tableKey}\0${nodeId}`),
        index: this.index,
        nodeState: (nodeId, iteration) => {
          readsStates = true;
          return this.s.states.get(nodeKey(nodeId, iteration))?.state;
        },
      });
      // A catch function is called with what failed, which any step can change: such a render renders every step.
      const failureOf = (node: PlanNode) => {
        readsStates = true;
        const failure = failureIn(node, this.s.states, this.now());
        return failure && describeFailure(failure, { lastErrors: this.lastErrors, states: this.s.states });
      };
      let plan: Plan;
      try {
        plan = withRenderContext(ctx, () => render(this.wf.build(ctx), this.s.loops), { failureIn: failureOf });
      } catch (error) {
        throw error instanceof SmithersError
          ? error
          : new SmithersError("INVALID_WORKFLOW", `Rendering the workflow failed: ${(error as Error)?.message ?? String(error)}`, { cause: error });
      }
      this.reads = reads;
      this.readsStates = readsStates;
      const membership = new Map(plan.tasks.filter((t) => t.loopId).map((t) => [t.nodeId, t.loopId!]));
      for (const task of plan.tasks) if (task.mode !== "timer") this.resolve(task);
      const newTables = this.wf.registry.all().slice(tablesBefore);
      for (const info of newTables) {
        if (this.s.outputRows) {
          for (const row of await loadOutputRows(this.db, info, this.s.runId)) this.index.addStored(info.key, row);
          continue;
        }
        const keys = await this.db.read("loadOutputKeys", async (q) => await readOutputKeys(q, info, this.s.runId));
        for (const k of keys) this.index.addKey(info.key, k.nodeId, k.iteration);
      }
      const stable = newTables.length === 0 && membership.size === this.membership.size && [...membership].every(([k, v]) => this.membership.get(k) === v);
      this.membership = membership;
      this.plan = plan;
      if (stable || pass >= 2) {
        this.renderStale = false;
        return plan;
      }
    }
  }

  /** What a task's `cache.by` reads: the ctx a render sees, at the task's iteration, with its node id. */
  private cacheCtx(task: PlanTask): CacheKeyContext {
    const ctx = buildCtx({
      runId: this.s.runId,
      input: this.s.input,
      registry: this.wf.registry,
      iteration: task.iteration,
      iterations: Object.fromEntries([...this.s.loops].map(([id, l]) => [id, l.iteration])),
      iterationOf: this.iterationOf,
      index: this.index,
    });
    return { ...ctx, nodeId: task.nodeId };
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
    let t = this.s.states.get(task.key);
    if (!t) this.s.states.set(task.key, (t = { state: "pending", lastAttempt: 0, failures: 0, abandons: 0 }));
    return t;
  }

  /** A row settled this step (`stored`: read back after its commit) becomes readable by ctx. */
  private remember(info: OutputTableInfo, row: Record<string, unknown>, stored = false): void {
    const normalized = normalizeRow(row);
    if (stored) this.index.addStored(info.key, normalized);
    else this.index.add(info.key, normalized);
    if (this.reads.has(`${info.key}\0${normalized.nodeId}`) || this.reads.has(`${info.key}\0${ALL_NODES}`)) this.renderStale = true;
  }

  /**
   * A node's attempt failed with `error`: kept for the run's error, and as its state's code and
   * message (what a `<TryCatchFinally>` decides on once the node failed for good; the next start clears it).
   */
  private noteError(key: string, error: SmithersError): void {
    this.lastErrors.set(key, error);
    const t = this.s.states.get(key);
    if (t) t.error = { code: error.code, message: error.message };
  }

  /** The earliest later time a node is due (a retry's backoff, a timer), if any: what a run held by its budget still waits for. */
  private nextDueMs(nowMs: number): number | undefined {
    let due: number | undefined;
    for (const t of this.s.states.values()) {
      const at = t.state === "pending" ? t.retryAtMs : t.state === "waiting-timer" ? t.wakeAtMs : undefined;
      if (at !== undefined && at > nowMs && (due === undefined || at < due)) due = at;
    }
    return due;
  }

  /** Adds what an ended attempt's agent consumed to the run's totals. */
  private account(result: AttemptResult): void {
    const { usage } = result;
    if (!usage) return;
    this.usage = addToTotals(this.usage, usage);
    this.unpricedModel ??= result.unpricedModel;
  }

  /** The run's usage for its result, when any agent reported some. */
  private usageResult(): { usage?: UsageTotals } {
    const u = this.usage;
    return u.inputTokens + u.outputTokens + u.cachedInputTokens > 0 || u.costUsd !== null ? { usage: u } : {};
  }

  /**
   * What a running agent reports: its text and tool calls become NodeOutput events (stored and
   * heard within OUTPUT_FLUSH_MS), its subprocess is recorded on the attempt for a later resume.
   */
  private agentEvent(ids: { nodeId: string; iteration: number; attempt: number }, event: AgentEvent): void {
    if (event.type === "process") {
      attemptRows.recordAgentProcess(this.db, { runId: this.s.runId, ...ids }, event.pid, event.startTime).catch(() => undefined);
      return;
    }
    let stream: "text" | "tool";
    let text: string;
    if (event.type === "text") {
      stream = "text";
      text = event.text;
    } else if (event.type === "tool-call") {
      stream = "tool";
      text = event.input === undefined ? event.toolName : `${event.toolName} ${safeStringify(event.input)}`;
    } else return;
    if (text === "" || this.ending) return;
    const key = `${ids.nodeId}#${ids.iteration}#${ids.attempt}`;
    if (stream === "text") {
      // Pieces that arrive together (a CLI streaming deltas) become one event per flush.
      const buffered = this.textBuffers.get(key);
      if (buffered) buffered.text += text;
      else this.textBuffers.set(key, { ids, text });
      if ((buffered?.text.length ?? text.length) >= OUTPUT_TEXT_MAX) this.emitText(key);
    } else {
      this.emitText(key); // what it said before the call comes first
      this.emit({ type: "NodeOutput", ...ids, stream, text: capText(text) });
    }
    this.flushOutputSoon();
  }

  /** Stages the text buffered for one attempt (or for all) as NodeOutput events. */
  private emitText(key?: string): void {
    if (this.textBuffers.size === 0) return;
    for (const k of key === undefined ? [...this.textBuffers.keys()] : [key]) {
      const buffered = this.textBuffers.get(k);
      if (!buffered) continue;
      this.textBuffers.delete(k);
      this.emit({ type: "NodeOutput", ...buffered.ids, stream: "text", text: capText(buffered.text) });
    }
  }

  /**
   * Stores staged events (agent output) in a transaction of their own, soon, unless a step is
   * under way: that step's commit carries them, with the frame and rows they go with.
   */
  private flushOutputSoon(): void {
    if (this.outputTimer) return;
    this.outputTimer = setTimeout(() => {
      this.outputTimer = undefined;
      if (this.ending) return;
      if (this.stepping) return this.flushOutputSoon(); // that step may already have committed: look again
      this.emitText();
      if (this.bus.stagedCount === 0) return;
      this.db
        .withTransaction("agentOutput", async (q) => {
          if (this.stepping || this.ending) return; // a step (or the run's end) began meanwhile: its commit stores them
          await this.checkOwner(q);
          await this.bus.writeStagedIn(q);
        })
        .catch(() => undefined); // kept staged: the next step stores them
    }, OUTPUT_FLUSH_MS);
    this.outputTimer.unref?.();
  }

  /** Records the run's failure and stops the attempts still in flight (they end cancelled). */
  private fail(error: SmithersError): void {
    this.failure ??= error;
    this.stop.abort();
  }

  /**
   * Starts the work of an attempt whose start row has committed. An attempt stopped from outside
   * ends only once its body settled, or after the grace period (then `abandoned`: the body may
   * still be running), so a retry never runs beside the body it replaces.
   */
  private launch(started: Started): void {
    const { result, bodySettled } = performAttempt(started.input);
    const work: Promise<void> = result
      .then(async (ended) => {
        const final = !ended.ok && ended.stopped ? await this.afterStop(ended, bodySettled) : ended;
        this.ended.push({ ...started, result: final });
      })
      .catch((thrown: unknown) => {
        // performAttempt never rejects; if that promise ever breaks, the attempt still ends
        // (failed, ENGINE_ERROR) instead of leaving the run asleep with it `running`.
        const error = new SmithersError("ENGINE_ERROR", `The engine lost the outcome of task "${started.task.nodeId}": ${describeThrown(thrown)}`, {
          nodeId: started.task.nodeId,
        });
        this.ended.push({ ...started, result: { ok: false, thrown, error, finishedAtMs: this.now() } });
      })
      .finally(() => {
        // Out of `working` before the run wakes: a step that finds nothing else to do must not
        // wait for work that already ended (it would sleep with nothing left to wake it).
        this.working.delete(work);
        this.wakeUp();
      });
    this.working.add(work);
  }

  private async afterStop(ended: Extract<AttemptResult, { ok: false }>, bodySettled: Promise<void>): Promise<AttemptResult> {
    const graceMs = this.settings.graceMs ?? DEFAULT_STOP_GRACE_MS;
    const hurry = this.settings.abandonSignal;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let onHurry: (() => void) | undefined;
    const graceOver = new Promise<boolean>((resolve) => {
      if (Number.isFinite(graceMs)) timer = setTimeout(resolve, Math.min(graceMs, MAX_TIMER_MS), false); // Infinity: wait for the body
      onHurry = () => resolve(false);
      if (hurry?.aborted) onHurry();
      hurry?.addEventListener("abort", onHurry, { once: true });
    });
    const inTime = await Promise.race([bodySettled.then(() => true), graceOver]);
    clearTimeout(timer);
    if (onHurry) hurry?.removeEventListener("abort", onHurry);
    if (inTime) return { ...ended, finishedAtMs: this.now() };
    const { error } = ended;
    const message = `${error.message}; its body did not stop within ${graceMs} ms of the stop and may still be running`;
    return {
      ...ended,
      error: new SmithersError(error.code, message, { ...error.details, graceMs, bodyMayBeRunning: true }),
      finishedAtMs: this.now(),
      abandoned: true,
    };
  }

  /**
   * Settles ended attempts in memory (states, snapshot, retry timers) and returns the writes
   * that record them, with their events, for the step's transaction.
   */
  private settle(ended: Ended[], runEnding = false): Write[] {
    const writes: Write[] = [];
    for (const e of ended) {
      const { task, tracked: t } = e;
      const ids = { nodeId: task.nodeId, iteration: task.iteration, attempt: e.input.attempt };
      // Attempts that end with the run (stopped by its cancel or failure) are not retried.
      const outcome = settleOutcome(e.input, e.result, !runEnding && t.failures < retryBudget(task));
      this.account(e.result);
      this.frames.markDirty(task.key);
      const events: Event[] = [];
      if (e.result.ok === false && e.result.abandoned) {
        events.push({ type: "NodeAbandoned", ...ids, reason: "body-unsettled", error: errorSummaryJson(e.result.error) });
      }
      if (outcome.kind === "finished") {
        const cached = e.result.ok && e.result.cache?.hit === true;
        events.push({ type: "NodeFinished", ...ids, durationMs: outcome.durationMs, ...(cached ? { cached } : {}) });
        this.remember(e.input.info, outcome.row);
        if (e.input.info.custom) this.customRows.push(e); // its own defaults are read back once stored
        t.state = "finished";
        this.finishedIds.add(task.nodeId);
      } else if (outcome.kind === "cancelled") {
        events.push({ type: "NodeCancelled", ...ids, durationMs: outcome.durationMs });
        t.state = "cancelled";
      } else if (outcome.kind === "suspended") {
        // The child run waits: so does the node, until the child is due (see resolveWaits).
        events.push({ type: "SubflowWaiting", ...ids, childRunId: outcome.childRunId, childStatus: outcome.status });
        t.state = outcome.status;
        t.wakeAtMs = outcome.wakeAtMs;
        this.waits.waiting.add(task.key);
      } else {
        events.push({ type: "NodeFailed", ...ids, durationMs: outcome.durationMs, error: errorSummaryJson(outcome.error) });
        t.failures++;
        t.state = outcome.retryable ? "pending" : "failed";
        this.noteError(task.key, outcome.error);
        if (outcome.retryable) {
          // Stored on the node (wake_at_ms) too, so a resume after a crash keeps the backoff.
          const delayMs = retryDelay(task.retryPolicy, t.failures, outcome.retryAfterMs);
          t.retryAtMs = outcome.retryAtMs = this.now() + delayMs;
          events.push({ type: "NodeRetrying", ...ids, attempt: ids.attempt + 1, delayMs, retryAtMs: t.retryAtMs });
        }
      }
      writes.push(async (q) => {
        await recordSettle(q, e.input, e.result, outcome);
        for (const event of events) this.emitInTransaction(event);
      });
    }
    return writes;
  }

  /**
   * Right after a transaction of the run committed: the rows it stored need not be held in
   * memory any longer, and rows of custom tables are read back as stored.
   */
  private async readCustomRows(): Promise<void> {
    this.index.committed();
    for (const e of this.customRows.splice(0)) {
      const key = { runId: this.s.runId, nodeId: e.task.nodeId, iteration: e.task.iteration };
      const row = await this.db.read("readOutput", async (q) => await readOutputRow(q, e.input.info, key));
      if (row) this.remember(e.input.info, row, true);
    }
  }

  /**
   * One step, one transaction: settles ended attempts, renders and decides in memory, then
   * commits the outcomes, the new attempts' start rows, skips, loop moves, events and the frame
   * together; only then does the new attempts' work start. Writes are replayable (a busy retry
   * runs them again); memory is never changed inside the transaction.
   */
  private async step(): Promise<StepNext> {
    this.stepping = true;
    try {
      return await this.stepInner();
    } finally {
      this.stepping = false;
    }
  }

  private async stepInner(): Promise<StepNext> {
    this.budgetHeld = undefined; // decided again each step: the held task may be gone from the plan
    this.emitText(); // agent text so far goes with this step's commit, before the outcomes it settles
    const ended = this.ended.splice(0);
    const settlesWork = ended.some((e) => !isPureAttempt(e.input)); // see defers
    const writes = this.settle(ended);
    const starts: Started[] = [];
    let batched: Write[] = [];
    let next: StepNext = "again";
    try {
      const nowMs = this.now();
      if (this.readsStates) this.renderStale = true;
      // Answers first, then the render that may depend on them (a <Signal>'s children, a ctx read).
      if (this.waits.waiting.size > 0) {
        await this.waits.resolveWaits(await this.renderPlan(), nowMs, writes);
        if (this.readsStates) this.renderStale = true;
      }
      const plan = await this.renderPlan();
      const actions = decide(plan, this.s.states, nowMs, this.settings.maxConcurrency ?? Infinity, this.memo, this.finishedIds);
      const finishedIterations: [loopId: string, iteration: number][] = [];
      for (const action of actions) next = this.plan_(action, nowMs, starts, writes, finishedIterations) ?? next;
      // An agent attempt held back by the budget and nothing else running, starting or due later
      // (a retry's backoff, a timer): the run ends here. While other work runs it waits for it.
      if (this.budgetHeld && starts.length === 0) {
        const dueMs = this.nextDueMs(nowMs);
        if (this.working.size > 0 || dueMs !== undefined) next = { untilMs: dueMs };
        else if (next !== "done") {
          this.fail(this.budgetHeld);
          next = "done";
        }
      }
      for (const st of starts) {
        st.tracked.state = "running";
        st.tracked.lastAttempt = st.input.attempt;
        st.tracked.retryAtMs = undefined;
        st.tracked.wakeAtMs = undefined;
        st.tracked.error = undefined;
        this.frames.markDirty(st.task.key);
      }
      const frame = this.frames.next(plan, (key) => this.s.states.get(key)?.state, nowMs);
      if (frame) {
        this.frameBox.push(frame);
        // Announced first among the step's events (the frame rows themselves go with the journal).
        writes.unshift(() => void this.emitInTransaction({ type: "FrameCommitted", frameNo: frame.frameNo, encoding: frame.encoding }));
      }
      // Only once the frame shows how the iteration ended.
      for (const [loopId, iteration] of finishedIterations) this.forgetIteration(loopId, iteration);
      // The run ends here: its last outcomes commit with the run's final status, in one transaction.
      if (next === "done" && starts.length === 0) {
        this.carried.push(...this.batch.splice(0), ...writes.splice(0));
        return next;
      }
      const startWrite: Write = async (q) => {
        for (const st of starts) {
          if (!st.input.startInSettle) await recordStart(q, st.input);
          this.emitInTransaction({ type: "NodeStarted", nodeId: st.task.nodeId, iteration: st.task.iteration, attempt: st.input.attempt });
        }
      };
      if (this.defers(starts, next, settlesWork)) {
        if (this.batchSteps++ === 0) this.batchSinceMs = performance.now();
        this.batch.push(...writes.splice(0), startWrite);
        for (const st of starts) {
          // Its settle joins this batch (the next step settles it, and commits with it or batches it too).
          st.input.startInSettle = true;
          this.ended.push({ ...st, result: performPureAttempt(st.input) });
        }
        return "again";
      }
      batched = this.batch.splice(0);
      this.batchSteps = 0;
      if (batched.length > 0 || writes.length > 0 || starts.length > 0 || this.frameBox.size > 0 || this.bus.stagedCount > 0) {
        await this.db.withTransaction("step", async (q) => {
          await this.checkOwner(q);
          for (const write of batched) await write(q);
          for (const write of writes) await write(q);
          await startWrite(q);
          await this.journal(q);
        });
      }
    } catch (error) {
      // Nothing of this step was stored (a render, a frame or the transaction failed): its
      // outcomes (and those of the steps batched before it) go with the run's last transaction,
      // and the attempts it would have started never started.
      this.carried.push(...batched, ...this.batch.splice(0), ...writes);
      for (const st of starts) {
        st.tracked.state = "pending";
        st.tracked.lastAttempt = st.input.attempt - 1;
        this.frames.markDirty(st.task.key);
      }
      throw error;
    }
    // Committed: the attempts it started run now, whatever happens next.
    for (const st of starts) this.launch(st);
    await this.readCustomRows();
    return next;
  }

  /**
   * Whether this step's writes can wait for a later step's commit: the run steps again at once
   * (it starts only pure attempts, done in memory now, or it moved a loop on), and the group of
   * such steps is still small and young. A step that starts other work, sleeps or ends commits;
   * so does one that settles an attempt which ran outside memory (`settlesWork`: it acted on the
   * world, and a crash must not make the resume run it again), and one after which a node waits
   * for the world, since each step then reads the database for its answer (which signal is still
   * free, what was decided) and must see every write before it.
   */
  private defers(starts: readonly Started[], next: StepNext, settlesWork: boolean): boolean {
    if (settlesWork || next === "done" || (starts.length === 0 && next !== "again") || this.waits.waiting.size > 0 || this.abort.signal.aborted || this.failure)
      return false;
    if (this.batchSteps >= PURE_BATCH_MAX_STEPS || (this.batchSteps > 0 && performance.now() - this.batchSinceMs >= PURE_BATCH_MAX_MS)) return false;
    return starts.every((st) => isPureAttempt(st.input));
  }

  /** Turns one scheduler action into memory changes, writes for the step, and what to do next. */
  private plan_(
    action: Action,
    nowMs: number,
    starts: Started[],
    writes: Write[],
    finishedIterations: [loopId: string, iteration: number][],
  ): "done" | { untilMs: number | undefined } | undefined {
    switch (action.type) {
      case "finish-run":
        return "done";
      case "suspend":
        // A timer due soon is waited for in place rather than by ending the process.
        if (action.untilMs !== undefined && action.untilMs - nowMs <= (this.settings.waitInPlaceMs ?? TIMER_WAIT_IN_PLACE_MS))
          return { untilMs: action.untilMs };
        this.suspended = action.status;
        this.suspendedUntilMs = action.untilMs;
        return "done";
      case "fire-timer":
      case "expire-wait":
      case "cancel-wait":
        this.waits.settle(action, nowMs, writes);
        return undefined;
      case "fail-run":
        // A task dropped from the plan while it ran can still finish what others wait on.
        if (action.failure.kind === "stuck" && this.working.size > 0) return { untilMs: undefined };
        this.fail(failureError(action.failure, { lastErrors: this.lastErrors, states: this.s.states }));
        return "done";
      case "wait":
        return { untilMs: action.untilMs };
      case "continue-as-new":
        this.continueFrom = action.from;
        return "done";
      case "start":
      case "retry": {
        const { task } = action;
        const tracked = this.tracked(task);
        if (task.mode === "timer") {
          this.waits.startTimer(task, tracked, nowMs, writes);
          return undefined;
        }
        if (task.mode === "approval") {
          this.waits.requestApproval(task, nowMs, writes);
          return undefined;
        }
        if (task.mode === "event") {
          this.waits.startEventWait(task, nowMs, writes);
          return undefined;
        }
        if (task.mode === "human") {
          this.waits.askHuman(task, nowMs, 1, writes);
          return undefined;
        }
        // <Task needsApproval>: the first start asks a person instead; once approved the task runs.
        if (task.approval?.mode === "gate" && !tracked.gatePassed) {
          this.waits.requestApproval(task, nowMs, writes);
          return undefined;
        }
        if (tracked.abandons >= task.maxAbandons) {
          this.crashLoop(task, tracked, nowMs, writes);
          return undefined;
        }
        // A child run may run agents too: a subflow is held like an agent task.
        if (task.mode === "agent" || task.mode === "subflow") {
          const held = budgetStop(this.s.runId, this.s.budget, this.usage, this.unpricedModel);
          if (held) {
            this.budgetHeld ??= held;
            return undefined; // not started: the run fails with it once nothing else runs (see stepInner)
          }
        }
        const attempt = tracked.lastAttempt + 1;
        const ids = { nodeId: task.nodeId, iteration: task.iteration, attempt };
        const input: AttemptInput = {
          db: this.db,
          runId: this.s.runId,
          task,
          info: this.resolve(task),
          attempt,
          input: this.s.input,
          runSignal: this.stop.signal,
          now: this.now,
          startedAtMs: nowMs,
          onToolCall: (e) => this.emit({ ...e, ...ids }),
          waitInPlaceMs: this.settings.waitInPlaceMs,
          rootDir: this.s.rootDir,
          ...(task.mode === "agent" ? { onAgentEvent: (event: AgentEvent) => this.agentEvent(ids, event) } : {}),
          ...(task.mode === "subflow"
            ? { budget: { budget: this.s.budget, spent: this.usage, ...(this.settings.pricing ? { pricing: this.settings.pricing } : {}) } }
            : {}),
          ...(this.settings.pricing ? { pricing: this.settings.pricing } : {}),
          ...(task.cache ? { cache: { workflowName: this.plan?.workflowName ?? this.wf.name, ctx: () => this.cacheCtx(task) } } : {}),
        };
        starts.push({ task, tracked, input });
        return undefined;
      }
      case "skip": {
        const { task } = action;
        const info = { tableName: this.tableNameOf(task) };
        writes.push(async (q) => {
          await nodes.upsertNode(q, {
            runId: this.s.runId,
            nodeId: task.nodeId,
            iteration: task.iteration,
            state: "skipped",
            updatedAtMs: nowMs,
            outputTable: info.tableName,
            label: task.label ?? null,
          });
          this.emitInTransaction({ type: "NodeSkipped", nodeId: task.nodeId, iteration: task.iteration });
        });
        this.tracked(task).state = "skipped";
        this.finishedIds.add(task.nodeId);
        this.frames.markDirty(task.key);
        return undefined;
      }
      case "advance-loop":
      case "finish-loop": {
        const { loop } = action;
        const state = action.type === "advance-loop" ? { iteration: loop.iteration + 1, done: false } : { iteration: loop.iteration, done: true };
        const type = action.type === "advance-loop" ? "LoopAdvanced" : "LoopFinished";
        writes.push(async (q) => {
          await ralph.setLoopState(q, { runId: this.s.runId, ralphId: loop.loopId, ...state, updatedAtMs: nowMs });
          this.emitInTransaction({ type, loopId: loop.loopId, iteration: state.iteration });
        });
        if (action.type === "advance-loop") finishedIterations.push([loop.loopId, loop.iteration]);
        this.s.loops.set(loop.loopId, state);
        this.renderStale = true;
        return undefined;
      }
    }
  }

  /**
   * Drops what memory holds for a loop iteration that is over (its tasks' states and errors), so
   * a long loop runs in flat memory: nothing reads them again (the next render mounts the next
   * iteration; a dependsOn on an unmounted id asks finishedIds; a resume reads the database).
   */
  private forgetIteration(loopId: string, iteration: number): void {
    for (const task of this.plan?.tasks ?? []) {
      if (task.loopId !== loopId || task.iteration !== iteration) continue;
      const state = this.s.states.get(task.key)?.state;
      if (state !== "finished" && state !== "skipped" && state !== "failed") continue; // not over (not expected at a boundary)
      this.s.states.delete(task.key);
      this.lastErrors.delete(task.key);
    }
  }

  /** A task's output table name, for its node row ("" for a timer, which writes no row). */
  private tableNameOf(task: PlanTask): string {
    return task.mode === "timer" ? "" : this.resolve(task).tableName;
  }

  /** A task whose process died under it `maxAbandons` times fails instead of starting again. */
  private crashLoop(task: PlanTask, t: TrackedNode, nowMs: number, writes: Write[]): void {
    const ids = { nodeId: task.nodeId, iteration: task.iteration, attempt: t.lastAttempt };
    const error = new SmithersError(
      "TASK_CRASH_LOOP",
      `Task "${task.nodeId}" was abandoned ${t.abandons} times because the process running it died each time (maxAbandons ${task.maxAbandons}); it is not started again`,
      { ...ids, abandons: t.abandons, maxAbandons: task.maxAbandons },
    );
    t.state = "failed";
    this.noteError(task.key, error);
    this.frames.markDirty(task.key);
    const info = this.resolve(task);
    writes.push(async (q) => {
      await nodes.upsertNode(q, {
        runId: this.s.runId,
        ...ids,
        state: "failed",
        lastAttempt: ids.attempt,
        errorJson: JSON.stringify(errorSummaryJson(error)),
        updatedAtMs: nowMs,
        outputTable: info.tableName,
        label: task.label ?? null,
      });
      this.emitInTransaction({ type: "NodeFailed", ...ids, error: errorSummaryJson(error) });
    });
  }

  /**
   * While a node waits for a decision, an answer, a signal or a child run and other work runs on
   * (async), the run looks for the answer at least every WAIT_POLL_MS: senders only mark runs
   * that are suspended, so a running one must look itself.
   */
  private pollWhileWaiting(untilMs: number | undefined): number | undefined {
    if (this.waits.waiting.size === 0) return untilMs;
    return Math.min(untilMs ?? Infinity, this.now() + WAIT_POLL_MS);
  }

  private wakeUp(): void {
    if (this.wake) this.wake();
    else this.wokenEarly = true;
  }

  private sleep(wakeAtMs: number | undefined): Promise<void> {
    if (this.wokenEarly) {
      this.wokenEarly = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      // Waking early is harmless (the next step decides again); a delay past MAX_TIMER_MS would fire at once.
      const timer = wakeAtMs === undefined ? undefined : setTimeout(resolve, Math.min(MAX_TIMER_MS, Math.max(0, wakeAtMs - this.now())));
      this.wake = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
    });
  }

  /** Another process claimed the run (its heartbeat CAS failed): stop without touching the run row. */
  lostOwnership(): void {
    this.lost = true;
    this.fail(new SmithersError("RUN_OWNED", `Run "${this.s.runId}" was taken over by another process`, { runId: this.s.runId }));
    this.wakeUp();
  }

  cancel(): void {
    this.abort.abort();
    this.stop.abort();
    this.wakeUp();
  }

  /** The tasks a render gives now; nothing is written (what a resume under changed code compares, see code-check.ts). */
  async plannedTasks(): Promise<readonly PlanTask[]> {
    return (await this.renderPlan()).tasks;
  }

  /** The result of a run that had already finished, read back without running or writing anything. */
  async readBack(): Promise<RunResult> {
    await this.renderPlan();
    return { runId: this.s.runId, status: "finished", output: this.result(), ...this.usageResult() };
  }

  async execute(): Promise<RunResult> {
    const { runId } = this.s;
    try {
      let named = false;
      let yieldedAtMs = performance.now();
      while (!this.abort.signal.aborted && !this.failure) {
        const next = await this.step();
        if (!named && this.plan) {
          named = true;
          // Against the stored name, not this process's: a run whose creator died before this point still has the default.
          if (this.plan.workflowName !== this.s.storedName) {
            await this.db.write("nameRun", async (q) => await runs.setRunFields(q, runId, { workflowName: this.plan!.workflowName }));
          }
          this.wf.name = this.plan.workflowName; // later runs of this workflow are created with it
        }
        if (next === "done") break;
        // Wait for work to end (or a backoff to pass) unless an ended attempt is already waiting,
        // or the run was cancelled or failed during the step (its wake-up came before this sleep).
        if (next !== "again" && this.ended.length === 0 && !this.abort.signal.aborted && !this.failure) await this.sleep(this.pollWhileWaiting(next.untilMs));
        if (performance.now() - yieldedAtMs >= YIELD_EVERY_MS) {
          // Steps of in-memory work and synchronous SQLite resolve as microtasks, and so does a
          // sleep that work ending in a microtask wakes: the process's timers and I/O (the
          // heartbeat, a Ctrl-C, a server in the same process) get a turn at least this often
          // however long a chain of such steps is. The loop's check for a cancel or failure that
          // came meanwhile follows.
          await new Promise((resolve) => setImmediate(resolve));
          yieldedAtMs = performance.now();
        }
      }
    } catch (error) {
      if (SmithersError.is(error, "RUN_OWNED")) this.lost = true;
      this.fail(asRunError(error));
    }
    while (this.working.size > 0) await Promise.all(this.working);
    this.emitText();
    this.ending = true;
    if (this.lost) return { runId, status: "failed", error: this.failure }; // the new owner writes from here on
    // Attempts stopped by a failure or cancel settle with the run's last transaction, and the
    // states they settled into belong in the last frame.
    const writes = [...this.carried.splice(0), ...this.batch.splice(0), ...this.settle(this.ended.splice(0), true)];
    if (this.plan) {
      try {
        const frame = this.frames.next(this.plan, (key) => this.s.states.get(key)?.state, this.now());
        if (frame) this.frameBox.push(frame);
      } catch (error) {
        this.fail(asRunError(error)); // the run still ends, failed, instead of staying `running`
      }
    }
    let status: RunStatus = this.abort.signal.aborted
      ? "cancelled"
      : this.failure
        ? "failed"
        : this.continueFrom
          ? "continued"
          : (this.suspended ?? "finished");
    let nextRunId: string | undefined;
    const error = status === "failed" && this.failure ? errorSummaryJson(this.failure) : undefined;
    const finishedAtMs = this.now();
    const planned = status;
    try {
      await this.db.withTransaction("finishRun", async (q) => {
        await this.checkOwner(q);
        status = planned; // (a retried transaction decides again)
        // Asked to stop (smithers cancel) since its last heartbeat, and about to wait: it ends cancelled instead.
        const cancelledInstead = isWaiting(status) && (await runs.readRun(q, runId))?.cancelRequestedAtMs != null;
        if (cancelledInstead) status = "cancelled";
        for (const write of writes) await write(q);
        if (cancelledInstead) await nodes.resetNodes(q, runId, [...WAITING_STATUSES], "cancelled", finishedAtMs);
        // Nothing is in flight any more: an attempt still `running` here is one the engine lost
        // track of (a bug), closed so a finished run never holds a running attempt.
        await this.closeLeftRunning(q, finishedAtMs, new SmithersError("ENGINE_ERROR", "The attempt was still recorded running when its run ended"));
        // What a waiting node waits for may have arrived after this run last looked: then it is due at once.
        const wakeAtMs = isWaiting(status) && (await this.waits.arrivedMeanwhile(q, this.plan)) ? finishedAtMs : (this.suspendedUntilMs ?? null);
        if (status === "continued") {
          const next = await createSuccessor(q, this.successorArgs(finishedAtMs));
          nextRunId = next.nextRunId;
          this.emitInTransaction(next.event);
        }
        await runs.setRunFields(q, runId, { status, finishedAtMs, wakeAtMs, nextRunId, ...(error ? { errorJson: JSON.stringify(error) } : {}) });
        if (status !== "continued") this.emitInTransaction(runEndedEvent(status, error));
        await this.journal(q);
      });
    } catch (cause) {
      if (SmithersError.is(cause, "RUN_OWNED")) return { runId, status: "failed", error: cause };
      return this.endFailed(asRunError(cause), finishedAtMs);
    }
    await this.readCustomRows();
    clearTimeout(this.outputTimer);
    const usage = this.usageResult();
    if (status === "cancelled" || isWaiting(status)) return { runId, status, ...usage };
    if (status === "continued") return { runId, status, nextRunId, ...usage };
    if (status === "failed") return { runId, status, error: this.failure, ...usage };
    return { runId, status, output: this.result(), ...usage };
  }

  private successorArgs(nowMs: number): Parameters<typeof createSuccessor>[1] {
    const { s } = this;
    return {
      registry: this.wf.registry,
      runId: s.runId,
      ownerId: s.ownerId,
      input: s.storedInput,
      loops: s.loops,
      from: this.continueFrom!,
      iteration: this.activeIteration(),
      nowMs,
      usage: this.usage,
    };
  }

  /**
   * The run's last transaction failed (a write that cannot be stored, a broken database): ends
   * the run `failed` without that step's writes, closing what was left running, so no attempt
   * stays `running` inside a finished run.
   */
  private async endFailed(cause: SmithersError, finishedAtMs: number): Promise<RunResult> {
    const { runId } = this.s;
    this.failure ??= cause;
    const failure = this.failure;
    const end = (withJournal: boolean) =>
      this.db.withTransaction("failRun", async (q) => {
        await this.checkOwner(q);
        await this.closeLeftRunning(q, finishedAtMs, cause);
        await runs.setRunFields(q, runId, { status: "failed", finishedAtMs, errorJson: JSON.stringify(errorSummaryJson(failure)) });
        this.emitInTransaction({ type: "RunFailed", status: "failed", error: errorSummaryJson(failure) });
        if (withJournal)
          await this.journal(q); // frames with the events that announce them
        else await this.bus.writeStagedIn(q);
      });
    try {
      await end(true);
    } catch (error) {
      if (SmithersError.is(error, "RUN_OWNED")) throw error;
      // The staged frames or events were what SQLite refused: the run still ends, without them.
      this.bus.dropStaged();
      await end(false);
    }
    return { runId, status: "failed", error: failure };
  }

  /** Inside a run-ending transaction: fails what is still recorded running, each with its NodeFailed. */
  private async closeLeftRunning(q: Sql, nowMs: number, cause: SmithersError): Promise<void> {
    const closed = await attemptRows.failRunningWork(q, this.s.runId, nowMs, errorJsonText(cause));
    for (const a of closed) this.emitInTransaction({ type: "NodeFailed", ...a, error: errorSummaryJson(cause) });
  }

  /** The `output` schema's latest row when the workflow has one, else the last finished task's row. */
  private result(): unknown {
    const declared = this.wf.registry.byKey.get("output");
    if (declared) return strip(this.index.latestInTable(declared.key));
    const tasks = this.plan?.tasks ?? [];
    for (let i = tasks.length - 1; i >= 0; i--) {
      const task = tasks[i]!;
      if (this.s.states.get(task.key)?.state !== "finished" || task.mode === "timer") continue;
      const info = this.wf.registry.resolve(task.output, task.outputSchema);
      return strip(this.index.row(info.key, task.nodeId, task.iteration));
    }
    return undefined;
  }
}

/** At most OUTPUT_TEXT_MAX characters, a longer text cut with "…". */
function capText(text: string): string {
  return text.length > OUTPUT_TEXT_MAX ? `${text.slice(0, OUTPUT_TEXT_MAX - 1)}…` : text;
}
