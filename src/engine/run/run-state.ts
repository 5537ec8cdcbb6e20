/**
 * What one executing run holds in memory between its steps, and the small operations every part
 * of the run loop shares (staging events, a node's tracked state, its output table, the output
 * index ctx reads). The loop itself is in run.ts; a step in run-step.ts; how a scheduler action
 * becomes writes in run-actions.ts; attempts in run-attempts.ts; the run's end in run-end.ts.
 */
import {
  frames as frameRows,
  normalizeRow,
  readOutputRow,
  readOutputRowNow,
  runs,
  type Sql,
  type OutputTableInfo,
  type SmithersDb,
  type Usage,
} from "../../db/index.ts";
import type { ModelPricing } from "../../agents/index.ts";
import { addToTotals, mergeLimits, type Limits } from "../core/index.ts";
import { SmithersError } from "../../errors/index.ts";
import type { Plan, PlanTask } from "../../jsx/index.ts";
import { LimitWaits, Waits } from "../waits/index.ts";
import type { AttemptInput, AttemptResult } from "../attempt/index.ts";
import type { StartChildRun } from "../waits/index.ts";
import { ALL_NODES, OutputIndex } from "../workflow/index.ts";
import type { EventBus } from "./event-bus.ts";
import type { EventBody } from "../core/index.ts";
import type { FrameRecorder } from "../history/index.ts";
import { Outbox } from "./outbox.ts";
import type { RunSetup, TrackedNode } from "./run-setup.ts";
import { DecideMemo, type ContinueFrom } from "../schedule/index.ts";
import { isWaiting, type RunStatus, type WaitingStatus } from "../core/index.ts";
import { GC_AFTER_TASKS, GC_EVERY, MAX_TIMER_MS, SYSTEM_CLOCK, type Clock } from "../core/index.ts";
import type { SmithersWorkflow } from "../workflow/index.ts";
import { AgentOutput } from "./agent-output.ts";
import { PureStepBatch } from "./pure-batch.ts";
import { ScoreRunner } from "./scoring.ts";

const LIMIT_WAITS: ReadonlySet<string> = new Set(["waiting-slot", "waiting-rate"]);

export type RunResult = {
  runId: string;
  status: RunStatus;
  output?: unknown;
  error?: SmithersError;
  /** Status `continued`: the run that carries on (runWorkflow follows it; a result it returns is never `continued`). */
  nextRunId?: string;
  /** What the run's agent attempts consumed in all (every execution of it), when any reported usage. */
  usage?: Usage;
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
  /** How a `<Subflow>` starts its child run (runWorkflow; a Run that only renders needs none). */
  startChildRun?: StartChildRun;
  /** The timers the run sets (its sleeps, task timeouts, grace periods); default the system's. */
  clock?: Clock;
  /** Limits by key over the workflow's own (see RunOptions.limits). */
  limits?: Limits;
  /** Set on a `<Subflow>`'s child run (RunOptions.parentRunId): its scorers are left to the parent's run to wait for. */
  parentRunId?: string;
};

/** An attempt whose start the step records; its work starts once that commits. */
export type Started = { task: PlanTask; tracked: TrackedNode; input: AttemptInput };
/** An attempt whose work ended, waiting for a step to record its outcome. */
export type Ended = Started & { result: AttemptResult };
/** One write of a step, replayable (a busy retry runs it again). */
export type Write = (q: Sql) => void | Promise<void>;
/** What a step tells the run loop: step again at once, the run is over, or sleep until a time (or until work ends). */
export type StepNext = "again" | "done" | { untilMs: number | undefined };

export class RunState {
  /** Work in flight (a task body running). */
  readonly working = new Set<Promise<void>>();
  /** Attempts whose work ended, waiting for the next step to commit their outcome. */
  ended: Ended[] = [];
  readonly lastErrors = new Map<string, SmithersError>();
  /** Which loop each node of the last plan belongs to. */
  membership = new Map<string, string>();
  /** The last plan rendered. */
  plan: Plan | undefined;
  /** `tableKey\0nodeId` of every output the last render looked up. */
  reads = new Set<string>();
  /** Something the last render could have seen changed (a row it read, a loop): render again. */
  renderStale = true;
  /** The last render read a node state (ctx.nodeState): states change every step, so each step renders again. */
  readsStates = false;
  /** Ended attempts of custom tables whose stored row must be read back. */
  readonly customRows: Ended[] = [];
  /** What ctx can read: which output rows exist, and the recent ones (others are read from SQLite). */
  readonly index: OutputIndex;
  /**
   * Node ids with a finished or skipped iteration: what a dependsOn on an id that is not mounted
   * now asks (see decide), kept so the states of finished loop iterations can be dropped.
   */
  readonly finishedIds = new Set<string>();
  /** Attempts settled in all (see gcDue). */
  settled = 0;
  /** `settled` when the run last collected its garbage, and the steps it took since. */
  private settledAtGc = 0;
  private stepsSinceGc = 0;
  /** The nodes waiting for the world: timers, decisions, answers, signals, child runs. */
  readonly waits: Waits;
  /** Tasks under a `concurrencyKey`: their slots and rate windows (see LimitWaits). */
  readonly limits: LimitWaits;
  /** The latest loop-state write made for each loop (see advance-loop in run-actions.ts). */
  readonly loopWrites = new Map<string, object>();
  /** The first render named the run (see nameRun in run-step.ts). */
  named = false;
  /** The name that render gave when it differs from the stored one (see nameRun). */
  renamed: string | undefined;
  /** The run's last transaction stores `renamed` with the final status (see endRun), not the naming write carried to it. */
  nameWithStatus = false;
  /**
   * A step of this execution stored an attempt `running` (a start not left to its settle): only
   * then can the run's end find one left running (a resume closed those a dead process left).
   */
  storedRunning = false;
  /** Set when the scheduler found nothing to do but wait: the run ends with this status. */
  suspended: WaitingStatus | undefined;
  /** When the suspended run must be looked at again: its earliest timer or timeout (stored on the run for the daemon). */
  suspendedUntilMs: number | undefined;
  /** Set when the scheduler decided to continue as a new run: the run ends `continued`. */
  continueFrom: ContinueFrom | undefined;
  /** Carried between decide() calls: states here only move forward (see DecideMemo). */
  readonly decideMemo = new DecideMemo();
  /** Frames waiting for the next transaction (see Outbox). */
  readonly frameBox = new Outbox<frameRows.NewFrame>();
  /** Writes of the step that decided the run is over, committed with the run's final status. */
  readonly carried: Write[] = [];
  /** Steps that started only pure attempts, not committed yet (see PureStepBatch). */
  readonly pureBatch = new PureStepBatch();
  failure: SmithersError | undefined;
  /** Aborted by the caller's signal: the run ends `cancelled`. */
  readonly abort = new AbortController();
  /** Aborted on cancel or failure: stops the attempts in flight. */
  readonly stop = new AbortController();
  /** What the run's agent attempts consumed so far (stored attempts plus settled ones). */
  usage: Usage;
  unpricedModel: string | undefined;
  /** Set when an agent attempt was held back by the run's budget: the run fails with it once nothing runs. */
  budgetHeld: SmithersError | undefined;
  /** Agent text and tool calls on their way to NodeOutput events. */
  readonly agentOutput: AgentOutput;
  private wake: (() => void) | undefined;
  /** A wake-up that came while the run was not asleep: the next sleep returns at once (no lost wake-up). */
  private wokenEarly = false;
  /** Another process took the run over: it ends without touching the run row. */
  lost = false;
  /** Sets the run's timers (RunSettings.clock); `now` reads the same time. */
  readonly clock: Clock;
  /** Scorers of finished attempts, run after their rows commit (see scoring.ts). */
  readonly scoring: ScoreRunner;
  /** A node's state by its key (what each step's frame reads), made once per run. */
  readonly stateOfKey = (key: string): string | undefined => this.setup.states.get(key)?.state;

  constructor(
    readonly wf: SmithersWorkflow,
    readonly setup: RunSetup,
    readonly db: SmithersDb,
    readonly bus: EventBus,
    readonly frames: FrameRecorder,
    readonly settings: RunSettings,
    readonly now: () => number,
  ) {
    this.clock = settings.clock ?? SYSTEM_CLOCK;
    this.scoring = new ScoreRunner(db, this.clock, now, settings.parentRunId);
    if (setup.outputRows) {
      // Rows cannot be read synchronously here: the index keeps every row of the run.
      this.index = new OutputIndex(() => undefined, { maxEntries: Number.POSITIVE_INFINITY, maxBytes: Number.POSITIVE_INFINITY });
      for (const [tableKey, rows] of Object.entries(setup.outputRows)) for (const row of rows) this.index.addStored(tableKey, row);
    } else {
      this.index = new OutputIndex((tableKey, nodeId, iteration) => {
        const info = wf.registry.byKey.get(tableKey);
        return info && readOutputRowNow(db, info, { runId: setup.runId, nodeId, iteration });
      });
    }
    for (const [tableKey, keys] of Object.entries(setup.outputKeys)) for (const k of keys) this.index.addKey(tableKey, k.nodeId, k.iteration);
    for (const id of setup.finishedIds) this.finishedIds.add(id);
    this.usage = setup.usage;
    this.unpricedModel = setup.unpricedModel;
    this.waits = new Waits({
      runId: setup.runId,
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
    this.limits = new LimitWaits(
      {
        runId: setup.runId,
        ownerId: setup.ownerId,
        db,
        now,
        tracked: (task) => this.tracked(task),
        markDirty: (key) => this.frames.markDirty(key),
        tableNameOf: (task) => this.tableNameOf(task),
      },
      mergeLimits(wf.limits ?? {}, settings.limits ?? {}),
    );
    this.agentOutput = new AgentOutput({
      runId: setup.runId,
      db,
      bus,
      emit: (event) => this.emit(event),
      checkOwner: (q) => this.checkOwner(q),
    });
    // Timers are left to the scheduler (see resolveWaits); a subflow may wait in any of these states.
    // A slot or a rate window is not an answer from outside: the scheduler and LimitWaits see to those.
    for (const [key, t] of setup.states) if (isWaiting(t.state) && !LIMIT_WAITS.has(t.state)) this.waits.waiting.add(key);
  }

  /** Stages an event: stored with the run's next transaction, heard by listeners once committed. */
  emit(event: EventBody): void {
    this.bus.stageBody(event, this.now());
  }

  /** Stages an event inside an open transaction: it commits or rolls back with it. */
  emitInTransaction(event: EventBody): void {
    this.bus.stageBodyInTransaction(event, this.now());
  }

  /** First in every transaction of the run: RUN_OWNED (and nothing written) once another process owns it. */
  async checkOwner(q: Sql): Promise<void> {
    if (!(await runs.ownsRun(q, this.setup.runId, this.setup.ownerId))) {
      throw new SmithersError("RUN_OWNED", `Run "${this.setup.runId}" was taken over by another process`, { runId: this.setup.runId });
    }
  }

  /** Inside any transaction of the run: stores the staged frames and events with it. */
  readonly journal = async (q: Sql): Promise<void> => {
    await this.frameBox.writeIn(this.db, async (rows) => await frameRows.insertFrames(q, rows));
    await this.bus.writeStagedIn(q);
  };

  readonly iterationOf = (nodeId: string) => {
    const loopId = this.membership.get(nodeId);
    return loopId ? (this.setup.loops.get(loopId)?.iteration ?? 0) : 0;
  };

  activeIteration(): number {
    const loop = this.plan?.loops.find((l) => !this.setup.loops.get(l.loopId)?.done);
    if (loop) return this.setup.loops.get(loop.loopId)?.iteration ?? 0;
    const open = [...this.setup.loops.values()].filter((l) => !l.done).map((l) => l.iteration);
    return open.length > 0 ? Math.max(...open) : 0;
  }

  /**
   * Asked once after each step: whether to collect garbage now (and count it done), every GC_EVERY
   * settled attempts or GC_EVERY steps, once the plan or the attempts settled so far reach GC_AFTER_TASKS.
   */
  gcDue(): boolean {
    this.stepsSinceGc++;
    if (this.settled - this.settledAtGc < GC_EVERY && this.stepsSinceGc < GC_EVERY) return false;
    if (this.settled < GC_AFTER_TASKS && (this.plan?.tasks.length ?? 0) < GC_AFTER_TASKS) return false;
    this.settledAtGc = this.settled;
    this.stepsSinceGc = 0;
    return true;
  }

  resolve(task: PlanTask): OutputTableInfo {
    const info = this.wf.registry.resolve(task.output, task.outputSchema);
    if (task.loopId && !info.hasIteration) {
      throw new SmithersError("CUSTOM_TABLE_INVALID", `Task "${task.nodeId}" runs in a loop but its table "${info.tableName}" has no iteration column`, {
        nodeId: task.nodeId,
        table: info.tableName,
      });
    }
    return info;
  }

  /** Scores the run's `pending` rows no scorer of this process runs (left by a process that died), with the last render's scorers. */
  recoverScores(): Promise<void> {
    return this.scoring.recover(this.setup.runId, this.plan?.tasks ?? [], (task) => this.resolve(task), this.setup.input);
  }

  /** A task's output table name, for its node row ("" for a timer, which writes no row). */
  tableNameOf(task: PlanTask): string {
    return task.mode === "timer" ? "" : this.resolve(task).tableName;
  }

  tracked(task: PlanTask): TrackedNode {
    let t = this.setup.states.get(task.key);
    if (!t) this.setup.states.set(task.key, (t = { state: "pending", lastAttempt: 0, failures: 0, abandons: 0 }));
    return t;
  }

  /** A row settled this step (`stored`: read back after its commit) becomes readable by ctx. */
  remember(info: OutputTableInfo, row: Record<string, unknown>, stored = false): void {
    const normalized = normalizeRow(row);
    if (stored) this.index.addStored(info.key, normalized);
    else this.index.add(info.key, normalized);
    if (this.reads.has(`${info.key}\0${normalized.nodeId}`) || this.reads.has(`${info.key}\0${ALL_NODES}`)) this.renderStale = true;
  }

  /**
   * Right after a transaction of the run committed: the rows it stored need not be held in
   * memory any longer, and rows of custom tables are read back as stored.
   */
  async readCustomRows(): Promise<void> {
    this.index.committed();
    for (const e of this.customRows.splice(0)) {
      const key = { runId: this.setup.runId, nodeId: e.task.nodeId, iteration: e.task.iteration };
      const row = await this.db.read("readOutput", async (q) => await readOutputRow(q, e.input.info, key));
      if (row) this.remember(e.input.info, row, true);
    }
  }

  /**
   * A node's attempt failed with `error`: kept for the run's error, and as its state's code and
   * message (what a `<TryCatchFinally>` decides on once the node failed for good; the next start clears it).
   */
  noteError(key: string, error: SmithersError): void {
    this.lastErrors.set(key, error);
    const t = this.setup.states.get(key);
    if (t) t.error = { code: error.code, message: error.message };
  }

  /**
   * Drops what memory holds for a loop iteration that is over (its tasks' states and errors), so
   * a long loop runs in flat memory: nothing reads them again (the next render mounts the next
   * iteration; a dependsOn on an unmounted id asks finishedIds; a resume reads the database).
   */
  forgetIteration(loopId: string, iteration: number): void {
    for (const task of this.plan?.tasks ?? []) {
      if (task.loopId !== loopId || task.iteration !== iteration) continue;
      const state = this.setup.states.get(task.key)?.state;
      if (state !== "finished" && state !== "skipped" && state !== "failed") continue; // not over (not expected at a boundary)
      this.setup.states.delete(task.key);
      this.lastErrors.delete(task.key);
    }
  }

  /** The earliest later time a node is due (a retry's backoff, a timer), if any: what a run held by its budget still waits for. */
  nextDueMs(nowMs: number): number | undefined {
    let due: number | undefined;
    for (const t of this.setup.states.values()) {
      const at = t.state === "pending" ? t.retryAtMs : t.state === "waiting-timer" || t.state === "waiting-rate" ? t.wakeAtMs : undefined;
      if (at !== undefined && at > nowMs && (due === undefined || at < due)) due = at;
    }
    return due;
  }

  /** Adds what an ended attempt's agent consumed to the run's totals. */
  account(result: AttemptResult): void {
    const { usage } = result;
    if (!usage) return;
    this.usage = addToTotals(this.usage, usage);
    this.unpricedModel ??= result.unpricedModel;
  }

  /** The run's usage for its result, when any agent reported some. */
  usageResult(): { usage?: Usage } {
    const u = this.usage;
    return u.inputTokens + u.outputTokens + u.cachedInputTokens > 0 || u.costUsd !== null ? { usage: u } : {};
  }

  /** Records the run's failure and stops the attempts still in flight (they end cancelled). */
  fail(error: SmithersError): void {
    this.failure ??= error;
    this.stop.abort();
  }

  wakeUp(): void {
    if (this.wake) this.wake();
    else this.wokenEarly = true;
  }

  sleep(wakeAtMs: number | undefined): Promise<void> {
    if (this.wokenEarly) {
      this.wokenEarly = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      // Waking early is harmless (the next step decides again); a delay past MAX_TIMER_MS would fire at once.
      const timer = wakeAtMs === undefined ? undefined : this.clock.setTimeout(resolve, Math.min(MAX_TIMER_MS, Math.max(0, wakeAtMs - this.now())));
      this.wake = () => {
        if (timer !== undefined) this.clock.clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
    });
  }
}
