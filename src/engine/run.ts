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
  approvals,
  attempts as attemptRows,
  frames as frameRows,
  humanRequests,
  signals,
  nodes,
  normalizeRow,
  ralph,
  readOutputKeys,
  readOutputRow,
  readOutputRowNow,
  outputRowFor,
  runs,
  writeOutputRow,
  stripBookkeeping as strip,
  type Drizzle,
  type OutputTableInfo,
  type SmithersDb,
} from "../db/index.ts";
import { describeThrown, errorJsonText, errorSummaryJson, SmithersError } from "../errors/index.ts";
import { nodeKey, render, type ApprovalSpec, type Plan, type PlanTask } from "../jsx/index.ts";
import { formatZodIssues, jsonSchemaOf } from "../schema/index.ts";
import { withRenderContext } from "../jsx/render-context.ts";
import type { z } from "zod";
import { humanAsk, humanRequestId } from "./human.ts";
import { subflowRunId } from "./subflow.ts";
import { performAttempt, recordSettle, recordStart, settleOutcome, type AttemptInput, type AttemptResult } from "./attempt.ts";
import { buildCtx, OutputIndex } from "./ctx.ts";
import type { EventBus } from "./event-bus.ts";
import { runEndedEvent, type EventBody } from "./events.ts";
import type { FrameRecorder } from "./frames.ts";
import { Outbox } from "./outbox.ts";
import type { RunSetup, TrackedNode } from "./run-setup.ts";
import { decide, DecideMemo, type Action, type Failure } from "./scheduler.ts";
import { isWaiting, type RunStatus, type WaitingStatus } from "./states.ts";
import { DEFAULT_STOP_GRACE_MS, DEFAULT_TASK_RETRY, MAX_TIMER_MS, TIMER_WAIT_IN_PLACE_MS } from "./constants.ts";
import type { SmithersWorkflow } from "./workflow.ts";

export type RunResult = {
  runId: string;
  status: RunStatus;
  output?: unknown;
  error?: SmithersError;
};

export type RunSettings = {
  maxConcurrency?: number;
  /** How long a stopped task body may take to settle before its attempt is recorded `abandoned` (default 10 s). */
  graceMs?: number;
  /** Ends the grace periods in progress at once. */
  abandonSignal?: AbortSignal;
  /** A timer due within this many ms is waited for in the process (default TIMER_WAIT_IN_PLACE_MS, 5 s). */
  waitInPlaceMs?: number;
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

function failureError(failure: Failure, lastErrors: Map<string, SmithersError>): SmithersError {
  switch (failure.kind) {
    case "loop-max":
      return new SmithersError(
        "LOOP_MAX_REACHED",
        `Loop "${failure.loop.loopId}" reached maxIterations (${failure.loop.maxIterations}) without meeting its until condition`,
        {
          loopId: failure.loop.loopId,
        },
      );
    case "stuck":
      return new SmithersError("INVALID_WORKFLOW", "Nothing can run: every remaining task waits on a dependsOn that can never finish");
    case "task":
      return lastErrors.get(failure.task.key) ?? new SmithersError("TASK_FAILED", `Task "${failure.task.nodeId}" failed`, { nodeId: failure.task.nodeId });
  }
}

/**
 * What a run fails with when a step throws: a SmithersError as is, a SQLite error as a failed
 * write, anything else as a fault of the engine itself (ENGINE_ERROR), never mistaken for storage.
 */
export function asRunError(error: unknown): SmithersError {
  if (SmithersError.is(error)) return error;
  const name = (error as { name?: unknown } | null)?.name;
  const code = (error as { code?: unknown } | null)?.code;
  if (name === "SQLiteError" || (typeof code === "string" && code.startsWith("SQLITE_"))) {
    return new SmithersError("DB_WRITE_FAILED", `The run could not record its progress: ${describeThrown(error)}`, { cause: error });
  }
  return new SmithersError("ENGINE_ERROR", `The engine failed: ${describeThrown(error)}`, { cause: error });
}

/** Human requests in ask order (1, 2, … 10: by number, not as text). */
const byAsk = <R extends { requestId: string }>(rows: R[]): R[] => [...rows].sort((a, b) => humanAsk(a.requestId) - humanAsk(b.requestId));

/** What a waiting node waits for: a `<Task needsApproval>` waits for an approval like an `<Approval>`. */
const waitKind = (t: PlanTask): PlanTask["mode"] => (t.approval ? "approval" : t.mode);

/** What `_smithers_approvals.request_json` holds: what the approver is shown, and for select/rank the options. */
function storedRequest(spec: ApprovalSpec): Record<string, unknown> {
  return { ...spec.request, ...(spec.mode === "approve" ? {} : { mode: spec.mode }), ...(spec.options ? { options: spec.options } : {}) };
}

const DECISION_SCHEMA_NAME = {
  approve: "approvalDecisionSchema",
  select: "approvalSelectionSchema",
  rank: "approvalRankingSchema",
  gate: "approvalDecisionSchema",
} as const;

/** The row a decided `<Approval>` writes, by mode (approve() checked a select/rank choice against the options). */
function decisionRow(spec: ApprovalSpec, row: approvals.ApprovalRow, approved: boolean): Record<string, unknown> {
  const decidedAt = row.decidedAtMs == null ? null : new Date(row.decidedAtMs).toISOString();
  const decidedBy = row.decidedBy ?? null;
  if (spec.mode === "select" || spec.mode === "rank") {
    let choice: { selected?: unknown; ranked?: unknown } = {};
    try {
      choice = row.decisionJson ? (JSON.parse(row.decisionJson) as typeof choice) : {};
    } catch {
      // left empty: the output schema refuses the row, and the node fails with INVALID_OUTPUT
    }
    const picked = spec.mode === "select" ? { selected: choice.selected } : { ranked: choice.ranked };
    return { ...picked, notes: row.note ?? null, decidedBy, decidedAt };
  }
  return { approved, note: row.note ?? null, decidedBy, decidedAt };
}

type Started = { task: PlanTask; tracked: TrackedNode; input: AttemptInput };
type Ended = Started & { result: AttemptResult };
type Event = EventBody;

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
  /** Keys of the nodes waiting for the world: a decision, an answer or a signal (see resolveWaits). */
  private readonly waiting = new Set<string>();
  /** Set when the scheduler found nothing to do but wait: the run ends with this status. */
  private suspended: WaitingStatus | undefined;
  /** When the suspended run must be looked at again: its earliest timer or timeout (stored on the run for the daemon). */
  private suspendedUntilMs: number | undefined;
  /** Carried between decide() calls: states here only move forward (see DecideMemo). */
  private readonly memo = new DecideMemo();
  /** Frames waiting for the next transaction (see Outbox). */
  private readonly frameBox = new Outbox<frameRows.NewFrame>();
  /** Writes of the step that decided the run is over, committed with the run's final status. */
  private readonly carried: ((d: Drizzle) => void)[] = [];
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
    private readonly db: SmithersDb,
    private readonly bus: EventBus,
    private readonly frames: FrameRecorder,
    private readonly settings: RunSettings,
    private readonly now: () => number,
  ) {
    this.index = new OutputIndex((tableKey, nodeId, iteration) => {
      const info = wf.registry.byKey.get(tableKey);
      return info && readOutputRowNow(db, info, { runId: s.runId, nodeId, iteration });
    });
    for (const [tableKey, keys] of Object.entries(s.outputKeys)) for (const k of keys) this.index.addKey(tableKey, k.nodeId, k.iteration);
    for (const id of s.finishedIds) this.finishedIds.add(id);
    // Timers are left to the scheduler (see resolveWaits); a subflow may wait in any of these states.
    for (const [key, t] of s.states) if (isWaiting(t.state)) this.waiting.add(key);
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
  private checkOwner(d: Drizzle): void {
    if (!runs.ownsRun(d, this.s.runId, this.s.ownerId)) {
      throw new SmithersError("RUN_OWNED", `Run "${this.s.runId}" was taken over by another process`, { runId: this.s.runId });
    }
  }

  /** Inside any transaction of the run: stores the staged frames and events with it. */
  private readonly journal = (d: Drizzle): void => {
    this.frameBox.writeIn(this.db, (rows) => {
      for (const f of rows) frameRows.insertFrame(d, f);
    });
    this.bus.writeStagedIn(d);
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
      let plan: Plan;
      try {
        plan = withRenderContext(ctx, () => render(this.wf.build(ctx), this.s.loops));
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
        const keys = await this.db.read("loadOutputKeys", (d) => readOutputKeys(d, info, this.s.runId));
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
    if (this.reads.has(`${info.key}\0${normalized.nodeId}`)) this.renderStale = true;
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
    const work = result
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
      .finally(() => this.wake?.());
    this.working.add(work);
    void work.finally(() => this.working.delete(work));
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
  private settle(ended: Ended[], runEnding = false): ((d: Drizzle) => void)[] {
    const writes: ((d: Drizzle) => void)[] = [];
    for (const e of ended) {
      const { task, tracked: t } = e;
      const ids = { nodeId: task.nodeId, iteration: task.iteration, attempt: e.input.attempt };
      // Attempts that end with the run (stopped by its cancel or failure) are not retried.
      const outcome = settleOutcome(e.input, e.result, !runEnding && t.failures < task.retries);
      this.frames.markDirty(task.key);
      const events: Event[] = [];
      if (e.result.ok === false && e.result.abandoned) {
        events.push({ type: "NodeAbandoned", ...ids, reason: "body-unsettled", error: errorSummaryJson(e.result.error) });
      }
      if (outcome.kind === "finished") {
        events.push({ type: "NodeFinished", ...ids, durationMs: outcome.durationMs });
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
        this.waiting.add(task.key);
      } else {
        events.push({ type: "NodeFailed", ...ids, durationMs: outcome.durationMs, error: errorSummaryJson(outcome.error) });
        if (outcome.retryable) events.push({ type: "NodeRetrying", ...ids, attempt: ids.attempt + 1 });
        this.lastErrors.set(task.key, outcome.error);
        t.failures++;
        t.state = outcome.retryable ? "pending" : "failed";
        if (outcome.retryable) t.retryAtMs = this.now() + retryDelay(task.retryPolicy, t.failures, outcome.retryAfterMs);
      }
      writes.push((d) => {
        recordSettle(d, e.input, e.result, outcome);
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
      const row = await this.db.read("readOutput", (d) => readOutputRow(d, e.input.info, key));
      if (row) this.remember(e.input.info, row, true);
    }
  }

  /**
   * One step, one transaction: settles ended attempts, renders and decides in memory, then
   * commits the outcomes, the new attempts' start rows, skips, loop moves, events and the frame
   * together; only then does the new attempts' work start. Writes are replayable (a busy retry
   * runs them again); memory is never changed inside the transaction.
   */
  private async step(): Promise<"again" | "done" | { untilMs: number | undefined }> {
    const writes = this.settle(this.ended.splice(0));
    const starts: Started[] = [];
    let next: "again" | "done" | { untilMs: number | undefined } = "again";
    try {
      const nowMs = this.now();
      if (this.readsStates) this.renderStale = true;
      // Answers first, then the render that may depend on them (a <Signal>'s children, a ctx read).
      if (this.waiting.size > 0) {
        await this.resolveWaits(await this.renderPlan(), nowMs, writes);
        if (this.readsStates) this.renderStale = true;
      }
      const plan = await this.renderPlan();
      const actions = decide(plan, this.s.states, nowMs, this.settings.maxConcurrency ?? Infinity, this.memo, this.finishedIds);
      const finishedIterations: [loopId: string, iteration: number][] = [];
      for (const action of actions) next = this.plan_(action, nowMs, starts, writes, finishedIterations) ?? next;
      for (const st of starts) {
        st.tracked.state = "running";
        st.tracked.lastAttempt = st.input.attempt;
        st.tracked.retryAtMs = undefined;
        st.tracked.wakeAtMs = undefined;
        this.frames.markDirty(st.task.key);
      }
      const frame = this.frames.next(plan, (key) => this.s.states.get(key)?.state, nowMs);
      if (frame) {
        this.frameBox.push(frame);
        this.emit({ type: "FrameCommitted", frameNo: frame.frameNo, encoding: frame.encoding });
      }
      // Only once the frame shows how the iteration ended.
      for (const [loopId, iteration] of finishedIterations) this.forgetIteration(loopId, iteration);
      // The run ends here: its last outcomes commit with the run's final status, in one transaction.
      if (next === "done" && starts.length === 0) {
        this.carried.push(...writes.splice(0));
        return next;
      }
      if (writes.length > 0 || starts.length > 0 || this.frameBox.size > 0 || this.bus.stagedCount > 0) {
        await this.db.withTransaction("step", (d) => {
          this.checkOwner(d);
          for (const write of writes) write(d);
          for (const st of starts) {
            recordStart(d, st.input);
            this.emitInTransaction({ type: "NodeStarted", nodeId: st.task.nodeId, iteration: st.task.iteration, attempt: st.input.attempt });
          }
          this.journal(d);
        });
      }
    } catch (error) {
      // Nothing of this step was stored (a render, a frame or the transaction failed): its
      // outcomes go with the run's last transaction, and the attempts it would have started
      // never started.
      this.carried.push(...writes);
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

  /** Turns one scheduler action into memory changes, writes for the step, and what to do next. */
  private plan_(
    action: Action,
    nowMs: number,
    starts: Started[],
    writes: ((d: Drizzle) => void)[],
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
        this.fireTimer(action.task, nowMs, writes);
        return undefined;
      case "expire-wait":
        this.expireWait(action.task, nowMs, writes);
        return undefined;
      case "fail-run":
        // A task dropped from the plan while it ran can still finish what others wait on.
        if (action.failure.kind === "stuck" && this.working.size > 0) return { untilMs: undefined };
        this.fail(failureError(action.failure, this.lastErrors));
        return "done";
      case "wait":
        return { untilMs: action.untilMs };
      case "start":
      case "retry": {
        const { task } = action;
        const tracked = this.tracked(task);
        if (task.mode === "timer") {
          this.startTimer(task, tracked, nowMs, writes);
          return undefined;
        }
        if (task.mode === "approval") {
          this.requestApproval(task, tracked, nowMs, writes);
          return undefined;
        }
        if (task.mode === "event") {
          this.startEventWait(task, nowMs, writes);
          return undefined;
        }
        if (task.mode === "human") {
          this.askHuman(task, nowMs, 1, writes);
          return undefined;
        }
        // <Task needsApproval>: the first start asks a person instead; once approved the task runs.
        if (task.approval?.mode === "gate" && !tracked.gatePassed) {
          this.requestApproval(task, tracked, nowMs, writes);
          return undefined;
        }
        if (tracked.abandons >= task.maxAbandons) {
          this.crashLoop(task, tracked, nowMs, writes);
          return undefined;
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
        };
        starts.push({ task, tracked, input });
        return undefined;
      }
      case "skip": {
        const { task } = action;
        const info = { tableName: this.tableNameOf(task) };
        writes.push((d) => {
          nodes.upsertNode(d, {
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
        writes.push((d) => {
          ralph.setLoopState(d, { runId: this.s.runId, ralphId: loop.loopId, ...state, updatedAtMs: nowMs });
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

  /** Starts a `<Timer>`: its fire time is fixed now and stored with the step, so a restart never moves it. */
  private startTimer(task: PlanTask, t: TrackedNode, nowMs: number, writes: ((d: Drizzle) => void)[]): void {
    const spec = task.timer!;
    const fireAtMs = spec.untilMs ?? nowMs + spec.durationMs!;
    t.state = "waiting-timer";
    t.wakeAtMs = fireAtMs;
    this.frames.markDirty(task.key);
    const key = { runId: this.s.runId, nodeId: task.nodeId, iteration: task.iteration };
    writes.push((d) => {
      nodes.upsertNode(d, {
        ...key,
        state: "waiting-timer",
        wakeAtMs: fireAtMs,
        lastAttempt: t.lastAttempt,
        updatedAtMs: nowMs,
        outputTable: "",
        label: task.label ?? null,
      });
      this.emitInTransaction({ type: "TimerScheduled", nodeId: task.nodeId, iteration: task.iteration, fireAtMs });
    });
  }

  /** A timer whose time has come: its node finishes (no row). */
  private fireTimer(task: PlanTask, nowMs: number, writes: ((d: Drizzle) => void)[]): void {
    const t = this.tracked(task);
    const firedLateMs = Math.max(0, nowMs - (t.wakeAtMs ?? nowMs));
    t.state = "finished";
    t.wakeAtMs = undefined;
    this.finishedIds.add(task.nodeId);
    this.frames.markDirty(task.key);
    const key = { runId: this.s.runId, nodeId: task.nodeId, iteration: task.iteration };
    writes.push((d) => {
      nodes.upsertNode(d, {
        ...key,
        state: "finished",
        wakeAtMs: null,
        lastAttempt: t.lastAttempt,
        updatedAtMs: nowMs,
        outputTable: "",
        label: task.label ?? null,
      });
      this.emitInTransaction({ type: "TimerFired", nodeId: task.nodeId, iteration: task.iteration, firedLateMs });
    });
  }

  /** Opens an `<Approval>` gate: the node waits (`waiting-approval`) and the request is stored with the step. */
  private requestApproval(task: PlanTask, t: TrackedNode, nowMs: number, writes: ((d: Drizzle) => void)[]): void {
    const info = this.resolve(task);
    const spec = task.approval!;
    t.state = "waiting-approval";
    this.waiting.add(task.key);
    this.frames.markDirty(task.key);
    const key = { runId: this.s.runId, nodeId: task.nodeId, iteration: task.iteration };
    writes.push((d) => {
      nodes.upsertNode(d, {
        ...key,
        state: "waiting-approval",
        lastAttempt: t.lastAttempt,
        updatedAtMs: nowMs,
        outputTable: info.tableName,
        label: task.label ?? null,
      });
      approvals.requestApprovalIn(d, { ...key, requestedAtMs: nowMs, request: storedRequest(spec) });
      this.emitInTransaction({ type: "ApprovalRequested", nodeId: task.nodeId, iteration: task.iteration, title: spec.request.title });
    });
  }

  /**
   * Nodes of the plan that wait for the world and whose answer arrived: decided gates, answered
   * (or cancelled) human requests, matching signals. Each kind is read only while a node waits for it.
   */
  private async resolveWaits(plan: Plan, nowMs: number, writes: ((d: Drizzle) => void)[]): Promise<void> {
    const waiting = plan.tasks.filter((t) => this.waiting.has(t.key));
    for (const t of waiting) if (t.mode === "timer") this.waiting.delete(t.key); // the scheduler fires timers
    const kinds = new Set(waiting.map(waitKind));
    const runId = this.s.runId;
    const found = await this.db.read("readWaits", (d) => ({
      approvals: kinds.has("approval") ? approvals.readApprovals(d, runId) : [],
      human: kinds.has("human") ? humanRequests.readHumanRequests(d, runId) : [],
      signals: kinds.has("event") ? signals.readOpenSignals(d, runId) : [],
      children: kinds.has("subflow") ? this.dueChildren(d, waiting, nowMs) : new Set<string>(),
    }));
    const decided = new Map(found.approvals.filter((r) => r.status !== "requested").map((r) => [nodeKey(r.nodeId, r.iteration), r]));
    for (const task of waiting) {
      if (waitKind(task) === "approval") {
        const row = decided.get(task.key);
        if (!row) continue;
        this.waiting.delete(task.key);
        this.settleApproval(task, row, nowMs, writes);
      } else if (task.mode === "human") {
        this.resolveHuman(task, found.human, nowMs, writes);
      } else if (task.mode === "event") {
        this.offerSignals(task, found.signals, nowMs, writes);
      } else if (task.mode === "subflow" && found.children.has(task.key)) {
        // Its child is due: the scheduler starts the node again, which resumes the child.
        this.waiting.delete(task.key);
        this.tracked(task).wakeAtMs = nowMs;
      }
    }
  }

  /** Keys of the waiting `<Subflow>` nodes whose child run is due (or no longer waits). */
  private dueChildren(d: Drizzle, waiting: PlanTask[], nowMs: number): Set<string> {
    const due = new Set<string>();
    for (const task of waiting) {
      if (task.mode !== "subflow") continue;
      const child = runs.readRun(d, subflowRunId(this.s.runId, task.nodeId, task.iteration));
      if (!child || !isWaiting(child.status) || (child.wakeAtMs !== null && child.wakeAtMs <= nowMs)) due.add(task.key);
    }
    return due;
  }

  /**
   * Inside the transaction that suspends the run: whether a waiting node's decision, answer or
   * signal is already stored. Senders mark only runs already waiting (runs.markRunDue), so one
   * that arrived between this run's last look and its suspension is caught here instead.
   */
  private arrivedMeanwhile(d: Drizzle): boolean {
    const waiting = (this.plan?.tasks ?? []).filter((t) => this.waiting.has(t.key));
    if (waiting.length === 0) return false;
    const runId = this.s.runId;
    const kinds = new Set(waiting.map(waitKind));
    if (kinds.has("approval")) {
      const decided = new Set(
        approvals
          .readApprovals(d, runId)
          .filter((r) => r.status !== "requested")
          .map((r) => nodeKey(r.nodeId, r.iteration)),
      );
      if (waiting.some((t) => waitKind(t) === "approval" && decided.has(t.key))) return true;
    }
    if (kinds.has("human")) {
      const latest = new Map(byAsk(humanRequests.readHumanRequests(d, runId)).map((r) => [nodeKey(r.nodeId, r.iteration), r.status]));
      if (waiting.some((t) => t.mode === "human" && latest.has(t.key) && latest.get(t.key) !== "pending")) return true;
    }
    if (kinds.has("subflow") && this.dueChildren(d, waiting, this.now()).size > 0) return true;
    if (kinds.has("event")) {
      const open = signals.readOpenSignals(d, runId);
      const matches = (t: PlanTask) =>
        open.some((sg) => sg.signalName === t.event!.event && (t.event!.correlationId === undefined || sg.correlationId === t.event!.correlationId));
      if (waiting.some((t) => t.mode === "event" && matches(t))) return true;
    }
    return false;
  }

  /** The row a waiting node ends with, checked against its output schema (and a narrower payload schema first). */
  private checkRow(task: PlanTask, value: unknown, payloadSchema?: z.ZodType): { ok: true; data: Record<string, unknown> } | { ok: false; issues: string } {
    const info = this.resolve(task);
    for (const schema of [payloadSchema, info.schema ?? task.outputSchema]) {
      if (!schema) continue;
      const parsed = schema.safeParse(value);
      if (!parsed.success) return { ok: false, issues: formatZodIssues(parsed.error.issues, "; ") };
      value = parsed.data;
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) return { ok: false, issues: "(root): expected an object" };
    return { ok: true, data: value as Record<string, unknown> };
  }

  /**
   * Ends a node that waited for the world: finished with its row, skipped, or failed. `before`
   * are events that go first (what ended the wait); `also` joins the same transaction.
   */
  private endWait(
    task: PlanTask,
    end: { state: "finished"; data: Record<string, unknown>; sinceMs: number } | { state: "skipped" } | { state: "failed"; error: SmithersError },
    nowMs: number,
    writes: ((d: Drizzle) => void)[],
    before: Event[],
    also?: (d: Drizzle) => void,
  ): void {
    const t = this.tracked(task);
    const info = this.resolve(task);
    const key = { runId: this.s.runId, nodeId: task.nodeId, iteration: task.iteration };
    const ids = { nodeId: task.nodeId, iteration: task.iteration };
    const events = [...before];
    this.waiting.delete(task.key);
    this.frames.markDirty(task.key);
    t.state = end.state;
    t.wakeAtMs = undefined;
    if (end.state === "finished") {
      const stored = outputRowFor(info, key, end.data);
      for (const field of Object.keys(stored)) stored[field] ??= null;
      this.remember(info, stored);
      events.push({ type: "NodeFinished", ...ids, attempt: t.lastAttempt, durationMs: Math.max(0, nowMs - end.sinceMs) });
    } else if (end.state === "skipped") {
      events.push({ type: "NodeSkipped", ...ids });
    } else {
      this.lastErrors.set(task.key, end.error);
      events.push({ type: "NodeFailed", ...ids, attempt: t.lastAttempt, error: errorSummaryJson(end.error) });
    }
    if (end.state !== "failed") this.finishedIds.add(task.nodeId);
    writes.push((d) => {
      also?.(d);
      if (end.state === "finished") writeOutputRow(d, info, key, end.data);
      nodes.upsertNode(d, {
        ...key,
        state: end.state,
        wakeAtMs: null,
        lastAttempt: t.lastAttempt,
        updatedAtMs: nowMs,
        outputTable: info.tableName,
        label: task.label ?? null,
      });
      for (const event of events) this.emitInTransaction(event);
    });
  }

  /** Puts a node in a waiting state with its deadline (and what a sender checks against), stored with the step. */
  private beginWait(
    task: PlanTask,
    state: "waiting-approval" | "waiting-event",
    deadlineMs: number | undefined,
    nowMs: number,
    writes: ((d: Drizzle) => void)[],
    also: (d: Drizzle) => void,
    waitJson?: string,
  ): void {
    const t = this.tracked(task);
    const info = this.resolve(task);
    t.state = state;
    t.wakeAtMs = deadlineMs;
    this.waiting.add(task.key);
    this.frames.markDirty(task.key);
    const key = { runId: this.s.runId, nodeId: task.nodeId, iteration: task.iteration };
    writes.push((d) => {
      nodes.upsertNode(d, {
        ...key,
        state,
        wakeAtMs: deadlineMs ?? null,
        waitJson: waitJson ?? null,
        lastAttempt: t.lastAttempt,
        updatedAtMs: nowMs,
        outputTable: info.tableName,
        label: task.label ?? null,
      });
      also(d);
    });
  }

  /** Starts a `<WaitForEvent>` / `<Signal>`: waits for a matching signal (one sent earlier is taken on the next step). */
  private startEventWait(task: PlanTask, nowMs: number, writes: ((d: Drizzle) => void)[]): void {
    const spec = task.event!;
    const info = this.resolve(task);
    const payloadSchema = spec.tagged ? spec.payloadSchema : (spec.payloadSchema ?? info.schema ?? task.outputSchema);
    const waitJson = JSON.stringify({
      event: spec.event,
      correlationId: spec.correlationId ?? null,
      schema: payloadSchema ? (jsonSchemaOf(payloadSchema) ?? null) : null,
    });
    const deadline = spec.timeoutMs === undefined ? undefined : nowMs + spec.timeoutMs;
    const ids = { nodeId: task.nodeId, iteration: task.iteration };
    this.beginWait(
      task,
      "waiting-event",
      deadline,
      nowMs,
      writes,
      () => this.emitInTransaction({ type: "SignalWaiting", ...ids, signalName: spec.event, correlationId: spec.correlationId ?? null }),
      waitJson,
    );
  }

  /** Offers a waiting signal node the open signals in seq order: it takes the first that matches and passes its schema. */
  private offerSignals(task: PlanTask, open: signals.SignalRow[], nowMs: number, writes: ((d: Drizzle) => void)[]): void {
    const spec = task.event!;
    const ids = { nodeId: task.nodeId, iteration: task.iteration };
    const runId = this.s.runId;
    for (let i = 0; i < open.length; i++) {
      const signal = open[i]!;
      if (signal.signalName !== spec.event || (spec.correlationId !== undefined && signal.correlationId !== spec.correlationId)) continue;
      open.splice(i--, 1); // offered once: taken or refused, no other node sees it this step
      let payload: unknown;
      try {
        payload = JSON.parse(signal.payloadJson);
      } catch {
        payload = undefined;
      }
      const checked = spec.tagged
        ? (() => {
            const inner = spec.payloadSchema ? spec.payloadSchema.safeParse(payload) : { success: true as const, data: payload };
            return inner.success
              ? this.checkRow(task, { kind: "signal", payload: inner.data })
              : { ok: false as const, issues: formatZodIssues(inner.error.issues, "; ") };
          })()
        : this.checkRow(task, payload, spec.payloadSchema);
      const seq = signal.seq;
      if (!checked.ok) {
        const error = new SmithersError(
          "SIGNAL_INVALID",
          `Signal "${spec.event}" (seq ${seq}) does not match the schema of "${task.nodeId}": ${checked.issues}`,
          { ...ids, seq },
        );
        const errorJson = JSON.stringify(errorSummaryJson(error));
        writes.push((d) => {
          signals.rejectSignal(d, { runId, seq, errorJson });
          this.emitInTransaction({ type: "SignalRejected", ...ids, signalName: spec.event, seq, error: errorSummaryJson(error) });
        });
        continue;
      }
      const received: Event = { type: "SignalReceived", ...ids, signalName: spec.event, seq, correlationId: signal.correlationId ?? null };
      // durationMs 0: the node did no work of its own; how long it waited is in its events.
      this.endWait(task, { state: "finished", data: checked.data, sinceMs: nowMs }, nowMs, writes, [received], (d) =>
        signals.consumeSignal(d, { runId, seq, ...ids, atMs: nowMs }),
      );
      return;
    }
  }

  /** Opens ask number `ask` of a `<HumanTask>`: a pending request in `_smithers_human_requests`, and the node waits. */
  private askHuman(task: PlanTask, nowMs: number, ask: number, writes: ((d: Drizzle) => void)[], note?: string): void {
    const spec = task.human!;
    const info = this.resolve(task);
    const schema = info.schema ?? task.outputSchema;
    const requestId = humanRequestId(this.s.runId, task.nodeId, task.iteration, ask);
    const deadline = spec.timeoutMs === undefined ? undefined : nowMs + spec.timeoutMs;
    const prompt = note ? `${spec.prompt}\n\n(asked again: ${note})` : spec.prompt;
    const ids = { nodeId: task.nodeId, iteration: task.iteration };
    this.beginWait(task, "waiting-approval", deadline, nowMs, writes, (d) => {
      humanRequests.createHumanRequestIn(d, {
        requestId,
        runId: this.s.runId,
        ...ids,
        kind: "json",
        prompt,
        schemaJson: schema ? JSON.stringify(jsonSchemaOf(schema) ?? null) : null,
        requestedAtMs: nowMs,
        timeoutAtMs: deadline ?? null,
      });
      this.emitInTransaction({ type: "HumanRequested", ...ids, requestId, prompt: spec.prompt });
    });
  }

  /** A waiting human task whose latest request was answered, cancelled or expired. */
  private resolveHuman(task: PlanTask, rows: humanRequests.HumanRequestRow[], nowMs: number, writes: ((d: Drizzle) => void)[]): void {
    const asks = byAsk(rows.filter((r) => r.nodeId === task.nodeId && r.iteration === task.iteration));
    const latest = asks.at(-1);
    if (!latest || latest.status === "pending") return;
    const ids = { nodeId: task.nodeId, iteration: task.iteration };
    const requestId = latest.requestId;
    if (latest.status === "cancelled" || latest.status === "expired") {
      const code = latest.status === "cancelled" ? "HUMAN_TASK_CANCELLED" : "HUMAN_TASK_TIMEOUT";
      const error = new SmithersError(code, `Human task "${task.nodeId}": request ${requestId} was ${latest.status}`, { ...ids, requestId });
      this.endWait(task, { state: "failed", error }, nowMs, writes, []);
      return;
    }
    let answer: unknown;
    try {
      answer = JSON.parse(latest.responseJson ?? "null");
    } catch {
      answer = undefined;
    }
    const checked = this.checkRow(task, answer);
    const answered = { type: "HumanAnswered" as const, ...ids, requestId, accepted: checked.ok, answeredBy: latest.answeredBy ?? null };
    if (checked.ok) {
      this.endWait(task, { state: "finished", data: checked.data, sinceMs: latest.requestedAtMs }, nowMs, writes, [answered]);
      return;
    }
    writes.push(() => this.emitInTransaction(answered));
    if (asks.length < task.human!.maxAttempts) {
      this.askHuman(task, nowMs, asks.length + 1, writes, checked.issues);
      return;
    }
    const error = new SmithersError(
      "HUMAN_ANSWER_INVALID",
      `Human task "${task.nodeId}": ${asks.length} answers did not match the output schema (maxAttempts ${task.human!.maxAttempts}); the last: ${checked.issues}`,
      { ...ids, requestId },
    );
    this.endWait(task, { state: "failed", error }, nowMs, writes, []);
  }

  /** A signal wait or human task whose timeout passed: ends as its onTimeout says (a human task fails). */
  private expireWait(task: PlanTask, nowMs: number, writes: ((d: Drizzle) => void)[]): void {
    const ids = { nodeId: task.nodeId, iteration: task.iteration };
    if (task.mode === "human") {
      const error = new SmithersError("HUMAN_TASK_TIMEOUT", `Human task "${task.nodeId}" was not answered within ${task.human!.timeoutMs} ms`, ids);
      this.endWait(task, { state: "failed", error }, nowMs, writes, [{ type: "WaitTimedOut", ...ids, outcome: "fail" }], (d) =>
        humanRequests.expireNodeRequestsIn(d, { runId: this.s.runId, ...ids }),
      );
      return;
    }
    const spec = task.event!;
    const timedOut: Event = { type: "WaitTimedOut", ...ids, outcome: spec.onTimeout };
    const checked = spec.onTimeout === "continue" ? this.checkRow(task, { kind: "timeout" }) : undefined;
    if (spec.onTimeout === "skip") {
      this.endWait(task, { state: "skipped" }, nowMs, writes, [timedOut]);
    } else if (checked?.ok) {
      this.endWait(task, { state: "finished", data: checked.data, sinceMs: nowMs }, nowMs, writes, [timedOut]);
    } else {
      const why = checked ? ` (its output schema refuses the timeout row { kind: "timeout" }: ${checked.issues})` : "";
      const error = new SmithersError("SIGNAL_TIMEOUT", `No signal "${spec.event}" reached "${task.nodeId}" within ${spec.timeoutMs} ms${why}`, {
        ...ids,
        signalName: spec.event,
      });
      this.endWait(task, { state: "failed", error }, nowMs, writes, [timedOut]);
    }
  }

  /**
   * A decided approval. An `<Approval>` ends with its decision row (approve: the decision; select:
   * the chosen key; rank: the keys in order), or as its onDeny says; a `<Task needsApproval>` that
   * was approved becomes startable (nothing written to its table), and fails when denied.
   */
  private settleApproval(task: PlanTask, row: approvals.ApprovalRow, nowMs: number, writes: ((d: Drizzle) => void)[]): void {
    const t = this.tracked(task);
    const info = this.resolve(task);
    const key = { runId: this.s.runId, nodeId: task.nodeId, iteration: task.iteration };
    const approved = row.status === "approved";
    const node = { ...key, lastAttempt: t.lastAttempt, updatedAtMs: nowMs, outputTable: info.tableName, label: task.label ?? null };
    const ids = { nodeId: task.nodeId, iteration: task.iteration };
    const events: Event[] = [{ type: "ApprovalDecided", ...ids, approved, decidedBy: row.decidedBy ?? null }];
    this.frames.markDirty(task.key);
    const spec = task.approval!;
    let state: "finished" | "skipped" | "failed" | "pending";
    let data: Record<string, unknown> | undefined;
    if (approved && spec.mode === "gate") {
      t.gatePassed = true;
      state = "pending";
    } else if (approved || spec.onDeny === "continue") {
      const decision = decisionRow(spec, row, approved);
      const parsed = (info.schema ?? task.outputSchema)?.safeParse(decision);
      if (parsed && !parsed.success) {
        const error = new SmithersError(
          "INVALID_OUTPUT",
          `Approval "${task.nodeId}": its output schema does not accept the decision row (use ${DECISION_SCHEMA_NAME[spec.mode]}): ${formatZodIssues(parsed.error.issues)}`,
          ids,
        );
        this.lastErrors.set(task.key, error);
        events.push({ type: "NodeFailed", ...ids, attempt: t.lastAttempt, error: errorSummaryJson(error) });
        state = "failed";
      } else {
        data = (parsed?.data ?? decision) as Record<string, unknown>;
        const stored = outputRowFor(info, key, data);
        for (const field of Object.keys(stored)) stored[field] ??= null;
        this.remember(info, stored);
        events.push({
          type: "NodeFinished",
          ...ids,
          attempt: t.lastAttempt,
          durationMs: Math.max(0, (row.decidedAtMs ?? nowMs) - (row.requestedAtMs ?? nowMs)),
        });
        state = "finished";
      }
    } else if (spec.onDeny === "skip") {
      events.push({ type: "NodeSkipped", ...ids });
      state = "skipped";
    } else {
      const by = row.decidedBy ? ` by ${row.decidedBy}` : "";
      const error = new SmithersError("APPROVAL_DENIED", `Approval "${task.nodeId}" was denied${by}${row.note ? `: ${row.note}` : ""}`, {
        ...ids,
        decidedBy: row.decidedBy,
        note: row.note,
      });
      this.lastErrors.set(task.key, error);
      events.push({ type: "NodeFailed", ...ids, attempt: t.lastAttempt, error: errorSummaryJson(error) });
      state = "failed";
    }
    t.state = state;
    if (state === "finished" || state === "skipped") this.finishedIds.add(task.nodeId);
    writes.push((d) => {
      if (data) writeOutputRow(d, info, key, data);
      nodes.upsertNode(d, { ...node, state });
      for (const event of events) this.emitInTransaction(event);
    });
  }

  /** A task whose process died under it `maxAbandons` times fails instead of starting again. */
  private crashLoop(task: PlanTask, t: TrackedNode, nowMs: number, writes: ((d: Drizzle) => void)[]): void {
    const ids = { nodeId: task.nodeId, iteration: task.iteration, attempt: t.lastAttempt };
    const error = new SmithersError(
      "TASK_CRASH_LOOP",
      `Task "${task.nodeId}" was abandoned ${t.abandons} times because the process running it died each time (maxAbandons ${task.maxAbandons}); it is not started again`,
      { ...ids, abandons: t.abandons, maxAbandons: task.maxAbandons },
    );
    this.lastErrors.set(task.key, error);
    t.state = "failed";
    this.frames.markDirty(task.key);
    const info = this.resolve(task);
    writes.push((d) => {
      nodes.upsertNode(d, {
        runId: this.s.runId,
        ...ids,
        state: "failed",
        lastAttempt: ids.attempt,
        updatedAtMs: nowMs,
        outputTable: info.tableName,
        label: task.label ?? null,
      });
      this.emitInTransaction({ type: "NodeFailed", ...ids, error: errorSummaryJson(error) });
    });
  }

  private sleep(wakeAtMs: number | undefined): Promise<void> {
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
        const next = await this.step();
        if (!named && this.plan) {
          named = true;
          if (this.plan.workflowName !== this.wf.name)
            await this.db.write("nameRun", (d) => runs.setRunFields(d, runId, { workflowName: this.plan!.workflowName }));
        }
        if (next === "done") break;
        // Wait for work to end (or a backoff to pass) unless an ended attempt is already waiting.
        if (next !== "again" && this.ended.length === 0) await this.sleep(next.untilMs);
      }
    } catch (error) {
      if (SmithersError.is(error, "RUN_OWNED")) this.lost = true;
      this.fail(asRunError(error));
    }
    while (this.working.size > 0) await Promise.all(this.working);
    if (this.lost) return { runId, status: "failed", error: this.failure }; // the new owner writes from here on
    // Attempts stopped by a failure or cancel settle with the run's last transaction, and the
    // states they settled into belong in the last frame.
    const writes = [...this.carried.splice(0), ...this.settle(this.ended.splice(0), true)];
    if (this.plan) {
      try {
        const frame = this.frames.next(this.plan, (key) => this.s.states.get(key)?.state, this.now());
        if (frame) this.frameBox.push(frame);
      } catch (error) {
        this.fail(asRunError(error)); // the run still ends, failed, instead of staying `running`
      }
    }
    const status: RunStatus = this.abort.signal.aborted ? "cancelled" : this.failure ? "failed" : (this.suspended ?? "finished");
    const error = status === "failed" && this.failure ? errorSummaryJson(this.failure) : undefined;
    const finishedAtMs = this.now();
    try {
      await this.db.withTransaction("finishRun", (d) => {
        this.checkOwner(d);
        for (const write of writes) write(d);
        // Nothing is in flight any more: an attempt still `running` here is one the engine lost
        // track of (a bug), closed so a finished run never holds a running attempt.
        this.closeLeftRunning(d, finishedAtMs, new SmithersError("ENGINE_ERROR", "The attempt was still recorded running when its run ended"));
        // What a waiting node waits for may have arrived after this run last looked: then it is due at once.
        const wakeAtMs = isWaiting(status) && this.arrivedMeanwhile(d) ? finishedAtMs : (this.suspendedUntilMs ?? null);
        runs.setRunFields(d, runId, { status, finishedAtMs, wakeAtMs, ...(error ? { errorJson: JSON.stringify(error) } : {}) });
        this.emitInTransaction(runEndedEvent(status, error));
        this.journal(d);
      });
    } catch (cause) {
      if (SmithersError.is(cause, "RUN_OWNED")) return { runId, status: "failed", error: cause };
      return this.endFailed(asRunError(cause), finishedAtMs);
    }
    await this.readCustomRows();
    if (status === "cancelled" || isWaiting(status)) return { runId, status };
    if (status === "failed") return { runId, status, error: this.failure };
    return { runId, status, output: this.result() };
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
      this.db.withTransaction("failRun", (d) => {
        this.checkOwner(d);
        this.closeLeftRunning(d, finishedAtMs, cause);
        runs.setRunFields(d, runId, { status: "failed", finishedAtMs, errorJson: JSON.stringify(errorSummaryJson(failure)) });
        this.emitInTransaction({ type: "RunFailed", status: "failed", error: errorSummaryJson(failure) });
        if (withJournal)
          this.journal(d); // frames with the events that announce them
        else this.bus.writeStagedIn(d);
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
  private closeLeftRunning(d: Drizzle, nowMs: number, cause: SmithersError): void {
    const closed = attemptRows.failRunningWork(d, this.s.runId, nowMs, errorJsonText(cause));
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
