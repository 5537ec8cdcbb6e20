/**
 * The driver of a workflow test: starts engine calls as drives on the test's database, each with
 * a view of the virtual clock owning its timers, hears their events, and tells when a drive has
 * settled (ended, or waits for the clock only) and when the whole process is quiet; advancing the
 * clock fires what is due in order and resumes the waiting runs whose time came, as the daemon does.
 */
import { cron as cronRows, runs, type SmithersDb } from "../db/index.ts";
import { fireDueCrons, runWorkflow, type Clock, type RunOptions, type RunResult, type SmithersEvent, type SmithersWorkflow } from "../engine/index.ts";
import { SmithersError } from "../errors/index.ts";
import { MAX_FIRINGS_PER_ADVANCE, QUIET_TURNS } from "./constants.ts";
import { Drive } from "./drive.ts";
import { VirtualClock } from "./virtual-clock.ts";

/** What t.run and t.resume take besides the input: runWorkflow's options, less those the kit sets. */
export type TestRunOptions = Omit<RunOptions, "enqueue" | "input" | "resume" | "dbPath" | "clock">;

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

export class Driver {
  readonly virtual: VirtualClock;
  /** Runs on a cron schedule of the test: advance() fires their slots. */
  crons = false;
  /** The latest drive of each run id it touched. */
  private readonly drives = new Map<string, Drive>();
  private readonly live = new Set<Drive>();
  private readonly heard = new Map<string, SmithersEvent[]>();
  /** Aborted by close(): runs still going are cancelled, and stopped task bodies abandoned at once. */
  private readonly stop = new AbortController();
  private eventCount = 0;
  private closed = false;

  constructor(
    private readonly workflow: SmithersWorkflow,
    private readonly db: SmithersDb,
    startAtMs: number,
  ) {
    this.virtual = new VirtualClock(startAtMs);
  }

  /** Runs (or resumes) `runId` as a new drive and returns its result once it settled (see WorkflowTest.run). */
  async drive(runId: string, options: TestRunOptions, also: { input?: unknown; resume?: true }): Promise<RunResult> {
    const drive = this.start(runId, (clock, onEvent) => runWorkflow(this.workflow, { ...this.runOptions(options, clock, onEvent), ...also, runId }));
    return await this.outcome(drive, runId);
  }

  /** The latest drive of the run, if the kit drove it. */
  latest(runId: string): Drive | undefined {
    return this.drives.get(runId);
  }

  /** The events heard of the run, in order. */
  events(runId: string): SmithersEvent[] {
    return [...(this.heard.get(runId) ?? [])];
  }

  /** Cancels what still runs and waits until every drive ended; later drives are refused. */
  async close(): Promise<void> {
    this.closed = true;
    this.stop.abort();
    while (this.live.size > 0) {
      this.virtual.fireDue();
      await Promise.race([Promise.all([...this.live].map((d) => d.next())), turn()]);
    }
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
  async outcome(drive: Drive, runId: string): Promise<RunResult> {
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

  async advanceTo(targetMs: number): Promise<void> {
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
        const fires = await fireDueCrons({ db: this.db, now: () => this.virtual.nowMs, clock, onEvent, resolveWorkflow: () => this.workflow });
        return Promise.all(fires.flatMap((f) => (f.action === "started" ? [f.result] : [])));
      });
    }
    await this.quiet();
  }
}
