/**
 * testWorkflow: a workflow run from a test against a throwaway database and a virtual clock. Timers,
 * retry backoffs, task timeouts and cron schedules fire when the test advances the clock, so an
 * hour-long timer takes milliseconds; approvals, signals and human answers are given from the test.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSmithersDb, readOutputRowsNow, runs, stripBookkeeping, type OutputRow, type SmithersDb } from "../db/index.ts";
import {
  addCron,
  answerHuman,
  approve,
  deny,
  humanInbox,
  isOver,
  sendSignal,
  type CronSchedule,
  type Decision,
  type DecideOptions,
  type RunResult,
  type SendSignalOptions,
  type SentSignal,
  type SmithersEvent,
  type SmithersWorkflow,
} from "../engine/index.ts";
import { SmithersError } from "../errors/index.ts";
import { DEFAULT_START_AT_MS } from "./constants.ts";
import { Driver, type TestRunOptions } from "./driver.ts";

export type { TestRunOptions } from "./driver.ts";

export type TestWorkflowOptions = {
  /** Where runs are stored: a fresh in-memory SQLite database (default), or a file in a new temp directory, deleted by close(). */
  db?: "memory" | "file";
  /** Where the virtual clock starts (default 2026-01-01T00:00:00Z). */
  startAt?: number | Date;
};

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
  private readonly driver: Driver;
  private closed = false;

  constructor(
    workflow: SmithersWorkflow,
    readonly db: SmithersDb,
    startAtMs: number,
    private readonly tempDir: string | undefined,
  ) {
    this.workflow = { ...workflow, dbFor: () => db };
    const driver = (this.driver = new Driver(this.workflow, db, startAtMs));
    this.clock = {
      now: () => driver.virtual.nowMs,
      advance: (ms) => driver.advanceTo(driver.virtual.nowMs + ms),
      advanceTo: (time) => driver.advanceTo(time instanceof Date ? time.getTime() : time),
    };
  }

  /** Starts a run with `input` and drives it until it ends, waits, or waits for the clock only. */
  async run(input?: unknown, options: TestRunOptions = {}): Promise<RunResult> {
    return await this.driver.drive(options.runId ?? crypto.randomUUID(), options, { input });
  }

  /**
   * The run's result now: a run this kit is still driving is followed until it settles (see run);
   * one that waits is resumed (after approve, signal or answer it goes on); one the kit saw end
   * (finished, failed, cancelled) is returned as it ended, not run again.
   */
  async resume(runId: string, options: TestRunOptions = {}): Promise<RunResult> {
    const drive = this.driver.latest(runId);
    if (drive && !drive.done) return await this.driver.outcome(drive, runId);
    const ended = drive?.results.get(runId);
    if (ended && isOver(ended.status)) return ended;
    return await this.driver.drive(runId, options, { resume: true });
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
    return this.driver.events(runId);
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
    this.driver.crons = true;
    const workflowPath = this.workflow.sourcePath ?? "workflow.tsx";
    return addCron(this.db, { ...options, workflowPath, schedule, now: this.clock.now });
  }

  /** Cancels what still runs, closes the database and deletes its file (`db: "file"`). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.driver.close();
    await this.db.close();
    if (this.tempDir) rmSync(this.tempDir, { recursive: true, force: true });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  private rows(runId: string): OutputRow[] {
    return this.workflow.registry.all().flatMap((info) => readOutputRowsNow(this.db, info, runId));
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
