/**
 * testWorkflow: a workflow run from a test against a throwaway database and a virtual clock. Timers,
 * retry backoffs, task timeouts and cron schedules fire when the test advances the clock, so an
 * hour-long timer takes milliseconds; approvals, signals and human answers are given from the test.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cron as cronRows, openSmithersDb, readOutputRowsNow, runs, stripBookkeeping, type OutputRow, type SmithersDb } from "../db/index.ts";
import {
  addCron,
  answerHuman,
  approve,
  deny,
  fireDueCrons,
  humanInbox,
  isOver,
  runWorkflow,
  sendSignal,
  type Clock,
  type CronSchedule,
  type Decision,
  type DecideOptions,
  type RunOptions,
  type RunResult,
  type SendSignalOptions,
  type SentSignal,
  type SmithersEvent,
  type SmithersWorkflow,
} from "../engine/index.ts";
import { SmithersError } from "../errors/index.ts";
import { DEFAULT_START_AT_MS, MAX_FIRINGS_PER_ADVANCE, QUIET_TURNS } from "./constants.ts";
import { Drive } from "./drive.ts";
import { VirtualClock } from "./virtual-clock.ts";

export type TestWorkflowOptions = {
  /** Where runs are stored: a fresh in-memory SQLite database (default), or a file in a new temp directory, deleted by close(). */
  db?: "memory" | "file";
  /** Where the virtual clock starts (default 2026-01-01T00:00:00Z). */
  startAt?: number | Date;
};

/** What t.run and t.resume take besides the input: runWorkflow's options, less those the kit sets. */
export type TestRunOptions = Omit<RunOptions, "enqueue" | "input" | "resume" | "dbPath" | "clock">;

/** The virtual clock of a test: only advance() moves it. */
export interface TestClock {
  /** The virtual time, ms since the epoch. */
  now(): number;
  /**
   * Moves the time `ms` forward, stopping at each timer, wake time and cron slot on the way: what
   * is due fires, waiting runs that are due are resumed, and each settles before the time moves on.
   */
  advance(ms: number): Promise<void>;
  /** advance() to a point in time (never back). */
  advanceTo(time: number | Date): Promise<void>;
}

function startMs(startAt: number | Date | undefined): number {
  const ms = startAt === undefined ? DEFAULT_START_AT_MS : startAt instanceof Date ? startAt.getTime() : startAt;
  if (!Number.isFinite(ms)) throw new SmithersError("INVALID_OPTION", `startAt must be a Date or ms since the epoch, got ${String(startAt)}`);
  return ms;
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A workflow under test; made by testWorkflow. `run` and `resume` return once the run ended,
 * stopped to wait (`waiting-approval`, `waiting-event`, `waiting-timer`), or, with status
 * `running`, waits in this process for the virtual clock only (a retry's backoff, a timer due
 * within `waitInPlaceMs`); a task still running keeps them waiting, as it does runWorkflow.
 */
export class WorkflowTest implements AsyncDisposable {
  /** The workflow as the kit runs it: the one given, on this test's database. */
  readonly workflow: SmithersWorkflow;
  readonly clock: TestClock;
  private readonly virtual: VirtualClock;
  /** The latest drive of each run id it touched. */
  private readonly drives = new Map<string, Drive>();
  private readonly live = new Set<Drive>();
  private readonly heard = new Map<string, SmithersEvent[]>();
  /** Aborted by close(): runs still going are cancelled, and stopped task bodies abandoned at once. */
  private readonly stop = new AbortController();
  private eventCount = 0;
  private crons = false;
  private closed = false;

  constructor(
    workflow: SmithersWorkflow,
    readonly db: SmithersDb,
    startAtMs: number,
    private readonly tempDir: string | undefined,
  ) {
    this.workflow = { ...workflow, dbFor: () => db };
    this.virtual = new VirtualClock(startAtMs);
    this.clock = {
      now: () => this.virtual.nowMs,
      advance: (ms) => this.advanceTo(this.virtual.nowMs + ms),
      advanceTo: (time) => this.advanceTo(time instanceof Date ? time.getTime() : time),
    };
  }

  /** Starts a run with `input` and drives it until it ends, waits, or waits for the clock only. */
  async run(input?: unknown, options: TestRunOptions = {}): Promise<RunResult> {
    const runId = options.runId ?? crypto.randomUUID();
    const drive = this.start(runId, (clock, onEvent) => runWorkflow(this.workflow, { ...this.runOptions(options, clock, onEvent), input, runId }));
    return await this.outcome(drive, runId);
  }

  /**
   * The run's result now: a run this kit is still driving is followed until it settles (see run);
   * one that waits is resumed (after approve, signal or answer it goes on); one the kit saw end
   * (finished, failed, cancelled) is returned as it ended, not run again.
   */
  async resume(runId: string, options: TestRunOptions = {}): Promise<RunResult> {
    const drive = this.drives.get(runId);
    if (drive && !drive.done) return await this.outcome(drive, runId);
    const ended = drive?.results.get(runId);
    if (ended && isOver(ended.status)) return ended;
    const next = this.start(runId, (clock, onEvent) => runWorkflow(this.workflow, { ...this.runOptions(options, clock, onEvent), runId, resume: true }));
    return await this.outcome(next, runId);
  }

  /** Approves the gate at `nodeId` (the run's only pending gate when left out); resume the run to go on. */
  approve(runId: string, nodeId?: string, options: Omit<DecideOptions, "runId" | "nodeId" | "now"> = {}): Promise<Decision> {
    return approve(this.db, { ...options, runId, ...(nodeId === undefined ? {} : { nodeId }), now: this.clock.now });
  }

  /** Denies the gate at `nodeId`; resume the run to go on. */
  deny(runId: string, nodeId?: string, options: Omit<DecideOptions, "runId" | "nodeId" | "now" | "selected" | "ranked"> = {}): Promise<Decision> {
    return deny(this.db, { ...options, runId, ...(nodeId === undefined ? {} : { nodeId }), now: this.clock.now });
  }

  /** Sends the signal `name` with `payload` to the run; resume the run to go on. */
  signal(runId: string, name: string, payload?: unknown, options: Omit<SendSignalOptions, "runId" | "name" | "data" | "now"> = {}): Promise<SentSignal> {
    return sendSignal(this.db, { ...options, runId, name, data: payload, now: this.clock.now });
  }

  /**
   * Answers the open request of the `<HumanTask>` at `nodeId` with `value` (checked against its
   * schema); HUMAN_REQUEST_NOT_FOUND when the node asks nothing now. Resume the run to go on.
   */
  async answer(runId: string, nodeId: string, value: unknown, options: { by?: string; iteration?: number } = {}): Promise<{ requestId: string }> {
    const open = (await humanInbox(this.db, this.clock.now)).filter(
      (r) => r.runId === runId && r.nodeId === nodeId && (options.iteration === undefined || r.iteration === options.iteration),
    );
    const request = open.at(-1);
    if (!request) throw new SmithersError("HUMAN_REQUEST_NOT_FOUND", `Run "${runId}" has no open human request at node "${nodeId}"`, { runId, nodeId });
    await answerHuman(this.db, { requestId: request.requestId, data: value, ...(options.by === undefined ? {} : { by: options.by }), now: this.clock.now });
    return { requestId: request.requestId };
  }

  /**
   * The output row of task `nodeId` in the run (its latest iteration, or `iteration`), without
   * run_id, node_id and iteration; undefined when it has none.
   */
  output(runId: string, nodeId: string, options: { iteration?: number } = {}): Record<string, unknown> | undefined {
    const rows = this.rows(runId).filter((r) => r.nodeId === nodeId && (options.iteration === undefined || r.iteration === options.iteration));
    return stripBookkeeping(rows.sort((a, b) => a.iteration - b.iteration).at(-1));
  }

  /** Every task's output row in the run (each its latest iteration), by node id. */
  outputs(runId: string): Record<string, Record<string, unknown>> {
    const latest = new Map<string, OutputRow>();
    for (const row of this.rows(runId)) if ((latest.get(row.nodeId)?.iteration ?? -1) <= row.iteration) latest.set(row.nodeId, row);
    return Object.fromEntries([...latest].map(([nodeId, row]) => [nodeId, stripBookkeeping(row)!]));
  }

  /** The events the kit heard of the run, in order. */
  events(runId: string): SmithersEvent[] {
    return [...(this.heard.get(runId) ?? [])];
  }

  /** Every run in the test's database, newest first, with its status (cron runs among them). */
  async runs(): Promise<{ runId: string; status: string; workflowName: string }[]> {
    const rows = await runs.listRecentRuns(this.db, { limit: Number.MAX_SAFE_INTEGER });
    return rows.map((r) => ({ runId: r.runId, status: r.status, workflowName: r.workflowName }));
  }

  /**
   * Schedules the workflow on a cron pattern (read in `timezone`, default UTC); its first slot is
   * the first after the virtual now, and advance() starts a run at each slot it passes.
   */
  cron(schedule: string, options: { cronId?: string; input?: unknown; timezone?: string } = {}): Promise<CronSchedule> {
    this.crons = true;
    const workflowPath = this.workflow.sourcePath ?? "workflow.tsx";
    return addCron(this.db, { ...options, workflowPath, schedule, now: this.clock.now });
  }

  /** Cancels what still runs, closes the database and deletes its file (`db: "file"`). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stop.abort();
    while (this.live.size > 0) {
      this.virtual.fireDue();
      await Promise.race([Promise.all([...this.live].map((d) => d.next())), turn()]);
    }
    await this.db.close();
    if (this.tempDir) rmSync(this.tempDir, { recursive: true, force: true });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  private rows(runId: string): OutputRow[] {
    return this.workflow.registry.all().flatMap((info) => readOutputRowsNow(this.db, info, runId));
  }

  private runOptions(options: TestRunOptions, clock: Clock, onEvent: (event: SmithersEvent) => void): RunOptions {
    const signal = options.signal ? AbortSignal.any([options.signal, this.stop.signal]) : this.stop.signal;
    const abandonSignal = options.abandonSignal ? AbortSignal.any([options.abandonSignal, this.stop.signal]) : this.stop.signal;
    const listen = options.onEvent;
    const both = (event: SmithersEvent) => {
      onEvent(event);
      listen?.(event);
    };
    return { ...options, clock, signal, abandonSignal, onEvent: listen ? both : onEvent };
  }

  /** Starts an engine call as a drive with a clock of its own timers; `runId`: the run it is about, when known. */
  private start(runId: string | undefined, call: (clock: Clock, onEvent: (event: SmithersEvent) => void) => Promise<RunResult | RunResult[]>): Drive {
    if (this.closed) throw new SmithersError("INVALID_OPTION", "This workflow test is closed");
    const drive = new Drive(runId);
    if (runId !== undefined) this.drives.set(runId, drive);
    this.live.add(drive);
    const onEvent = (event: SmithersEvent) => {
      this.eventCount++;
      this.drives.set(event.runId, drive);
      let list = this.heard.get(event.runId);
      if (!list) this.heard.set(event.runId, (list = []));
      list.push(event);
      drive.hear(event);
    };
    const ended = (results: RunResult[] | undefined, error?: unknown) => {
      this.live.delete(drive);
      drive.end(results, error);
    };
    call(this.virtual.for(drive), onEvent).then(
      (result) => ended(Array.isArray(result) ? result : [result]),
      (error: unknown) => ended(undefined, error),
    );
    return drive;
  }

  /** The drive's result once it settles (see run); a rejection of the engine call is thrown. */
  private async outcome(drive: Drive, runId: string): Promise<RunResult> {
    await this.settle(drive);
    if (drive.failed) throw drive.failed.error;
    const id = drive.lastRunId ?? runId;
    if (drive.done) return drive.results.get(id) ?? [...drive.results.values()].at(-1) ?? { runId: id, status: "running" };
    return { runId: id, status: "running" };
  }

  /** Until the drive ended, or only its timers on the virtual clock can move it on. */
  private async settle(drive: Drive): Promise<void> {
    while (!drive.done) {
      if (drive.working.size > 0) {
        await drive.next(); // a task body at work, in real time
        continue;
      }
      await this.quiet();
      if (drive.done || drive.working.size > 0) continue;
      if (this.virtual.hasTimers(drive)) return;
      // Between two states (ending, or about to start an attempt): look again once something happens.
      await Promise.race([drive.next(), turn()]);
    }
  }

  /** Until nothing moved for QUIET_TURNS turns of the event loop; timers due at the current time fire on the way. */
  private async quiet(): Promise<void> {
    let mark = -1;
    let still = 0;
    while (still < QUIET_TURNS) {
      await turn();
      const now = this.virtual.activity + this.eventCount;
      if (now !== mark) {
        mark = now;
        still = 0;
      } else if (this.virtual.fireDue() > 0) {
        still = 0;
      } else {
        still++;
      }
    }
  }

  private async advanceTo(targetMs: number): Promise<void> {
    if (!(Number.isFinite(targetMs) && targetMs >= this.virtual.nowMs)) {
      throw new SmithersError("INVALID_OPTION", `The clock moves forward only: ${String(targetMs)} is before ${this.virtual.nowMs}`);
    }
    await this.quiet();
    for (let stops = 0; ; stops++) {
      if (stops >= MAX_FIRINGS_PER_ADVANCE)
        throw new SmithersError("INVALID_OPTION", `advance() stopped after ${stops} due times: something keeps setting timers`);
      const at = await this.nextDueMs(targetMs);
      if (at === undefined) break;
      this.virtual.set(at);
      await this.wake();
    }
    this.virtual.set(targetMs);
    await this.wake();
  }

  /** The earliest time after now and at most `limitMs` at which a timer, a waiting run or a cron slot is due. */
  private async nextDueMs(limitMs: number): Promise<number | undefined> {
    const nowMs = this.virtual.nowMs;
    const times = [this.virtual.nextAtMs()];
    for (const run of await runs.listDueRuns(this.db, limitMs)) times.push(run.wakeAtMs ?? undefined);
    if (this.crons) for (const c of await cronRows.listDueCrons(this.db, limitMs, Number.MAX_SAFE_INTEGER)) times.push(c.nextRunAtMs ?? undefined);
    const later = times.filter((t): t is number => t !== undefined && t > nowMs && t <= limitMs);
    return later.length === 0 ? undefined : Math.min(...later);
  }

  /** Fires what is due now: timers, waiting runs (resumed), cron slots (started); returns once all of it is quiet. */
  private async wake(): Promise<void> {
    this.virtual.fireDue();
    for (const run of await runs.listDueRuns(this.db, this.virtual.nowMs)) {
      const drive = this.drives.get(run.runId);
      if (drive && !drive.done) continue;
      this.start(run.runId, (clock, onEvent) => runWorkflow(this.workflow, { ...this.runOptions({}, clock, onEvent), runId: run.runId, resume: true }));
    }
    if (this.crons) {
      this.start(undefined, async (clock, onEvent) => {
        const fires = await fireDueCrons({ db: this.db, now: this.clock.now, clock, onEvent, resolveWorkflow: () => this.workflow });
        return Promise.all(fires.flatMap((f) => (f.action === "started" ? [f.result] : [])));
      });
    }
    await this.quiet();
  }
}

/**
 * A workflow under test: its runs go to a throwaway database (in memory, or `{ db: "file" }`) and
 * keep time by a virtual clock the test moves with `t.clock.advance(ms)`.
 * @example
 * await using t = await testWorkflow(workflow);
 * const run = await t.run({ name: "Ada" });
 * expect(t.output(run.runId, "greet")).toEqual({ message: "Hello, Ada!" });
 */
export async function testWorkflow(workflow: SmithersWorkflow, options: TestWorkflowOptions = {}): Promise<WorkflowTest> {
  const at = startMs(options.startAt);
  const kind = options.db ?? "memory";
  if (kind !== "memory" && kind !== "file") throw new SmithersError("INVALID_OPTION", `db must be "memory" or "file", got ${String(kind)}`);
  const tempDir = kind === "file" ? mkdtempSync(join(tmpdir(), "smithers-test-")) : undefined;
  const db = openSmithersDb(tempDir ? join(tempDir, "smithers.db") : ":memory:", { shared: false });
  await db.ensureOutputTables([workflow.registry.input, ...workflow.registry.all()]);
  return new WorkflowTest(workflow, db, at, tempDir);
}
