/**
 * A worker: one process of a pool that shares a database (PostgreSQL across hosts, or one SQLite
 * file). Each pass, while it has a free slot, it
 *   1. takes over runs whose owner stopped heartbeating (a dead worker's runs),
 *   2. wakes waiting runs that are due (a decision, answer or signal arrived; a timer is due),
 *   3. claims queued requests with a lease (FOR UPDATE SKIP LOCKED on PostgreSQL),
 *   4. fires due cron slots,
 * and executes what it took in this process. A claimed request is handed to its run in the
 * transaction that creates (or resumes) the run; from then on the run's owner id and heartbeat
 * are its lease: every step's commit checks the owner under a lock, and a run whose heartbeat is
 * older than the lease is taken over by compare-and-swap, by exactly one worker, from its last
 * committed step. Between passes the worker sleeps until the poll interval ends, a slot frees up,
 * or (PostgreSQL) a notification says a run was queued or became due.
 */
import { readdirSync } from "node:fs";
import { basename, extname, join, resolve } from "node:path";
import { MISSED_BEATS_BEFORE_STALE, queue, runs, STALE_RUN_THRESHOLD_MS, WORK_CHANNEL, type Durability, type SmithersDb } from "../../db/index.ts";
import { errorSummaryJson, errorToJson, SmithersError } from "../../errors/index.ts";
import { checkLimits, HEARTBEAT_INTERVAL_MS, type Limits } from "../core/index.ts";
import { cronOutcomes, fireDueCrons } from "./cron-fire.ts";
import type { SmithersEvent } from "../core/index.ts";
import { newOwnerId, queueName } from "../core/index.ts";
import type { RunResult } from "../run/index.ts";
import { clockOf, takeOver, wake, type SuperviseOptions, type SuperviseOutcome } from "./supervisor.ts";
import { runRoom, workflowRoom } from "./rooms.ts";
import type { SmithersWorkflow } from "../workflow/index.ts";

export const DEFAULT_WORKER_CONCURRENCY = 4;
export const DEFAULT_POLL_INTERVAL_MS = 1_000;
/** How long a worker passes over a request whose workflow it could not load (another worker may can). */
const LOAD_FAILURE_BACKOFF_MS = 60_000;
/**
 * The longest a worker passes over a run it could not claim because its row was locked (a step in
 * flight, perhaps of a process cut off mid-transaction): a poll interval, not at once, or every
 * pass that a finished run starts would ask again.
 */
const LOCKED_BACKOFF_MS = 1_000;
/** Loads that failed (on any worker) after which a request fails instead of going back. */
export const MAX_LOAD_RETURNS = 5;
/** How many such requests it remembers. */
const MAX_SKIPPED = 100;
/** Stale or due runs listed beyond the free slots, so runs this worker cannot serve do not hide the rest. */
const LISTING_SLACK = 100;

/** A workflow registered under a name (its file name without extension): what `--workflows DIR` and `serve` hold. */
export type RegisteredWorkflow = { name: string; path: string; workflow: SmithersWorkflow };

export type WorkerOptions = {
  db: SmithersDb;
  /** Runs executing at once in this worker (default 4). */
  concurrency?: number;
  /**
   * The workflows this worker runs, by name: it claims only requests for them and takes over or
   * wakes only their runs. Without it, it loads each request's and run's recorded workflow file.
   */
  workflows?: readonly RegisteredWorkflow[];
  /**
   * The lease, in ms (default 30 s): a claimed request, or a running run whose heartbeat is older
   * than this, is taken by another worker. Give every worker of a database the same value.
   */
  leaseMs?: number;
  /** Longest sleep between passes when nothing wakes the worker (default 1 s). */
  pollIntervalMs?: number;
  durability?: Durability;
  /** Limits by key over the workflows' own (`--limit`), for every run this worker executes; give every worker the same. */
  limits?: Limits;
  /** Every event of the runs this worker executes. */
  onEvent?: (event: SmithersEvent) => void;
  /** What became of each run or request the worker took, when it settles. */
  onOutcome?: (outcome: WorkerOutcome) => void;
  /** This worker's id in `_smithers_queue.claimed_by` (default host:pid:random). */
  workerId?: string;
  now?: () => number;
};

export type WorkerOutcome =
  /** Taken over or woken: resumed (its result), or handed back, lost to another worker, or left to its live owner. */
  | SuperviseOutcome
  /** A queued request it executed (until the run ended or stopped to wait). */
  | { runId: string; action: "ran"; result: RunResult }
  /** A queued request that cannot run (its run exists and runs elsewhere, an input the run refuses…): removed. */
  | { runId: string; action: "dropped"; reason: string }
  /** A claimed request given back for other workers: its workflow did not load here. */
  | { runId: string; action: "returned"; reason: string }
  /** A pass or a request that failed on the database: the next pass (or lease expiry) retries. */
  | { runId: string; action: "error"; reason: string };

const reasonOf = (error: unknown) => (error instanceof SmithersError ? `${error.code}: ${error.message}` : String((error as Error)?.message ?? error));
const DB_TROUBLE = new Set(["DB_WRITE_FAILED", "DB_CLOSED", "DB_UNAVAILABLE"]);

/** Registers every `*.tsx` workflow file in `dir` by its file name. */
export async function loadWorkflowsDir(dir: string): Promise<RegisteredWorkflow[]> {
  const files = readdirSync(dir)
    .filter((f) => extname(f) === ".tsx")
    .sort();
  return Promise.all(
    files.map(async (f) => {
      const path = resolve(join(dir, f));
      return { name: basename(f, ".tsx"), path, workflow: await (await workflowRoom()).loadWorkflowFile(path) };
    }),
  );
}

export class Worker {
  readonly id: string;
  readonly concurrency: number;
  readonly leaseMs: number;
  private readonly pollIntervalMs: number;
  private readonly heartbeatMs: number;
  private readonly byName: ReadonlyMap<string, RegisteredWorkflow> | undefined;
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly aborts = new Map<string, AbortController>();
  /**
   * Runs and requests passed over until a time (this worker's own clock): their workflow did not
   * load here, their owner still runs here, or another process held or took them.
   */
  private readonly skipped = new Map<string, number>();
  /** Requests claimed and not yet handed to their run: their leases are renewed until then. */
  private readonly claimed = new Set<string>();
  private nudged = false;
  /** How soon the next queued request's not-before time comes (from the last pass), when it does. */
  private dueInMs: number | undefined;
  private wakeUp: (() => void) | undefined;

  constructor(private readonly o: WorkerOptions) {
    this.id = o.workerId ?? newOwnerId();
    this.concurrency = positive(o.concurrency ?? DEFAULT_WORKER_CONCURRENCY, "concurrency", true);
    this.leaseMs = positive(o.leaseMs ?? STALE_RUN_THRESHOLD_MS, "leaseMs");
    this.pollIntervalMs = positive(o.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS, "pollIntervalMs");
    // Several beats per lease, so a run whose owner lives is never judged stale.
    this.heartbeatMs = Math.min(HEARTBEAT_INTERVAL_MS, Math.max(1, Math.floor(this.leaseMs / 4)));
    this.byName = o.workflows ? new Map(o.workflows.map((w) => [w.name, w])) : undefined;
    if (o.limits !== undefined) checkLimits(o.limits);
  }

  /** Runs executing in this worker now. */
  get running(): number {
    return this.inFlight.size;
  }

  /** Starts a pass now instead of at the end of the sleep (new work was queued in this process). */
  nudge(): void {
    this.nudged = true;
    this.wakeUp?.();
  }

  /** Cancels a run this worker executes from the queue, at once; false when it is not one of them. */
  cancelLocal(runId: string): boolean {
    const abort = this.aborts.get(runId);
    abort?.abort();
    return abort !== undefined;
  }

  /**
   * Passes until `stop` aborts, then takes nothing more and waits for the runs in flight to settle
   * (they end or stop to wait); `abandon` ends that wait at once, and any wait on the database (the
   * runs left go stale and other workers take them over once the lease runs out).
   */
  async run(stop: AbortSignal, abandon?: AbortSignal): Promise<void> {
    // Once abandoned, nothing more is awaited from the database: it may not answer at all (a partition).
    const abandoned = new Promise<undefined>((done) => {
      if (abandon?.aborted) done(undefined);
      abandon?.addEventListener("abort", () => done(undefined), { once: true });
    });
    const unlessAbandoned = <T>(work: Promise<T>) => Promise.race([work, abandoned]);
    const unlisten = await unlessAbandoned(
      this.o.db
        .listen(WORK_CHANNEL, () => this.nudge())
        .catch((error: unknown) => {
          this.report({ runId: "", action: "error", reason: `LISTEN failed, polling only: ${reasonOf(error)}` });
          return undefined;
        }),
    );
    const renew = setInterval(() => void this.renewLeases(), Math.max(1, Math.floor(this.leaseMs / 3)));
    const onStop = () => this.wakeUp?.();
    stop.addEventListener("abort", onStop, { once: true });
    try {
      while (!stop.aborted && !abandon?.aborted) {
        this.nudged = false;
        try {
          await unlessAbandoned(this.pass(stop));
        } catch (error) {
          this.report({ runId: "", action: "error", reason: reasonOf(error) });
        }
        if (!this.nudged && !stop.aborted) await this.sleep();
      }
      await this.drain(abandon);
    } finally {
      clearInterval(renew);
      stop.removeEventListener("abort", onStop);
      await unlessAbandoned(unlisten?.().catch(() => undefined) ?? Promise.resolve());
    }
  }

  /** One pass: fills free slots with stale runs, due runs, queued requests, then due cron slots. */
  async pass(stop?: AbortSignal): Promise<void> {
    // The database's clock: another host's heartbeats and leases are compared with it, not with ours.
    const nowMs = await clockOf(this.o);
    const free = () => (stop?.aborted ? 0 : this.concurrency - this.inFlight.size);
    const supervise = this.superviseOptions();
    // Runs it cannot serve (another worker's workflows, a file that did not load here) are passed
    // over, so the window looks past them; only runs with a recorded file are listed at all.
    const window = () => free() + this.inFlight.size + this.skipped.size + LISTING_SLACK;
    const takeable = (run: runs.RunRow) => !this.inFlight.has(run.runId) && !this.skipped.has(run.runId) && this.serves(run);
    if (free() > 0) {
      const stale = await runs.listStaleRuns(this.o.db, {
        nowMs,
        staleAfterMs: this.leaseMs,
        missedBeats: MISSED_BEATS_BEFORE_STALE,
        withWorkflowPathOnly: true,
        limit: window(),
      });
      for (const run of stale) {
        if (free() <= 0) break;
        if (takeable(run)) this.track(run.runId, this.passOverUntaken(run.runId, takeOver(supervise, run, nowMs)));
      }
    }
    if (free() > 0) {
      for (const run of await runs.listDueRuns(this.o.db, nowMs, window(), true)) {
        if (free() <= 0) break;
        if (takeable(run)) this.track(run.runId, this.passOverUntaken(run.runId, wake(supervise, run, nowMs)));
      }
    }
    while (free() > 0) {
      const row = await queue.claimNext(this.o.db, {
        workerId: this.id,
        nowMs,
        leaseMs: this.leaseMs,
        ...(this.byName ? { workflows: [...this.byName.keys()] } : {}),
        skip: [...this.inFlight.keys(), ...this.skipList()],
      });
      if (!row) break;
      this.track(row.runId, this.execute(row));
    }
    // A debounced request waits out its quiet period: sleep until then if that is sooner than a poll interval.
    const notBefore = free() > 0 ? await queue.nextNotBefore(this.o.db, nowMs) : undefined;
    this.dueInMs = notBefore === undefined ? undefined : notBefore - nowMs;
    if (free() > 0 && this.byName === undefined) {
      // Cron schedules name their workflow file; a worker with a fixed set of workflows leaves them to others.
      const fires = await fireDueCrons({
        db: this.o.db,
        now: () => nowMs,
        onEvent: this.o.onEvent,
        durability: this.o.durability,
        heartbeatMs: this.heartbeatMs,
        limit: free(),
      });
      for (const fire of fires) {
        if (fire.action !== "started") {
          for (const outcome of cronOutcomes(fire)) this.report(outcome);
          continue;
        }
        this.track(
          fire.runId,
          fire.result.then((result) => cronOutcomes(fire, result)),
        );
      }
    }
  }

  /**
   * A run not taken is passed over a while instead of asked for again on every pass: handed back
   * (its workflow did not load here) like a request; its owner still runs here, for a lease (its
   * heartbeat may come back); lost (another process held or took it), for a poll interval.
   */
  private async passOverUntaken(runId: string, outcome: Promise<SuperviseOutcome>): Promise<SuperviseOutcome> {
    const settled = await outcome;
    const backoffs: Partial<Record<SuperviseOutcome["action"], number>> = {
      released: LOAD_FAILURE_BACKOFF_MS,
      skipped: this.leaseMs,
      lost: Math.min(this.pollIntervalMs, LOCKED_BACKOFF_MS),
    };
    const backoff = backoffs[settled.action];
    if (backoff !== undefined) this.skipped.set(runId, this.localNow() + backoff);
    return settled;
  }

  private localNow(): number {
    return (this.o.now ?? Date.now)();
  }

  private superviseOptions(): SuperviseOptions {
    return {
      db: this.o.db,
      staleAfterMs: this.leaseMs,
      missedBeats: MISSED_BEATS_BEFORE_STALE,
      resolveWorkflow: (run) => this.workflowOfRun(run),
      onEvent: this.o.onEvent,
      durability: this.o.durability,
      heartbeatMs: this.heartbeatMs,
      ...(this.o.limits ? { limits: this.o.limits } : {}),
    };
  }

  /** Whether this worker can load the run's workflow (a named set: one of them; else: a recorded file). */
  private serves(run: runs.RunRow): boolean {
    return this.byName ? this.registeredFor(run) !== undefined : run.workflowPath !== null;
  }

  /** By the file the run recorded: the same path, else the same file name (another host keeps it elsewhere). */
  private registeredFor(run: runs.RunRow): RegisteredWorkflow | undefined {
    if (run.workflowPath === null) return undefined;
    for (const w of this.byName?.values() ?? []) if (run.workflowPath === w.path) return w;
    return this.byName?.get(queueName(run.workflowPath));
  }

  private workflowOfRun(run: runs.RunRow): SmithersWorkflow | Promise<SmithersWorkflow> | undefined {
    if (this.byName) return this.registeredFor(run)?.workflow;
    const path = run.workflowPath;
    return path === null ? undefined : workflowRoom().then((m) => m.loadWorkflowFile(path));
  }

  /** Executes a claimed request: creates its run (or resumes it) and runs it until it ends or waits. */
  private async execute(row: queue.QueueRow): Promise<WorkerOutcome> {
    this.claimed.add(row.runId);
    const abort = new AbortController();
    this.aborts.set(row.runId, abort);
    try {
      let workflow: SmithersWorkflow;
      try {
        workflow = this.byName?.get(row.workflowName)?.workflow ?? (await (await workflowRoom()).loadWorkflowFile(row.workflowPath));
      } catch (error) {
        const nowMs = await clockOf(this.o);
        if ((row.returnCount ?? 0) + 1 >= MAX_LOAD_RETURNS) {
          // Tried often enough, by this worker or others: the run fails, with why, instead of waiting forever.
          const failure = new SmithersError("WORKFLOW_LOAD_FAILED", `No worker could load ${row.workflowPath} (${MAX_LOAD_RETURNS} tries): ${reasonOf(error)}`);
          await queue.failClaimed(this.o.db, row, this.id, JSON.stringify(errorToJson(failure)), nowMs);
          return { runId: row.runId, action: "dropped", reason: failure.message };
        }
        // Another host may have the file: the request goes back, and this worker passes over it a while.
        this.skipped.set(row.runId, this.localNow() + LOAD_FAILURE_BACKOFF_MS);
        await queue.releaseClaim(this.o.db, row.runId, this.id, { counted: true });
        return { runId: row.runId, action: "returned", reason: reasonOf(error) };
      }
      const { asRunError, runWorkflow } = await runRoom();
      const exists = (await runs.getRun(this.o.db, row.runId)) !== undefined;
      try {
        const result = await runWorkflow(workflow, {
          runId: row.runId,
          resume: exists,
          ...(exists || row.inputJson === null ? {} : { input: JSON.parse(row.inputJson) }),
          ...(exists || row.traceParent === null ? {} : { traceParent: row.traceParent }),
          dbPath: this.o.db.target,
          workflowPath: row.workflowPath,
          heartbeatMs: this.heartbeatMs,
          signal: abort.signal,
          onEvent: (event) => {
            // Created or resumed: the request was handed to the run in that transaction; no lease to renew.
            if (event.type === "RunStarted" || event.type === "RunResumed") this.claimed.delete(row.runId);
            this.o.onEvent?.(event);
          },
          durability: this.o.durability,
          ...(this.o.limits ? { limits: this.o.limits } : {}),
        });
        // Usually handed off already; not when there was nothing to resume (a finished run, or a
        // continued one whose chain end ran instead): the request is done either way.
        await queue.removeClaimed(this.o.db, row.runId, this.id);
        return { runId: row.runId, action: "ran", result };
      } catch (error) {
        const failure = asRunError(error);
        if (DB_TROUBLE.has(failure.code)) {
          // Database trouble: the request goes back for the next try (or its lease runs out).
          await queue.releaseClaim(this.o.db, row.runId, this.id).catch(() => undefined);
          return { runId: row.runId, action: "error", reason: reasonOf(failure) };
        }
        // A run that failed before its row existed is stored failed with why (ps, GET /runs); a stored run keeps its own record.
        await queue.failClaimed(this.o.db, row, this.id, JSON.stringify(errorSummaryJson(failure)), (this.o.now ?? Date.now)());
        return { runId: row.runId, action: "dropped", reason: reasonOf(failure) };
      }
    } finally {
      this.claimed.delete(row.runId);
      this.aborts.delete(row.runId);
    }
  }

  private track(runId: string, work: Promise<WorkerOutcome | WorkerOutcome[]>): void {
    const done = work
      .then(
        (outcome) => (Array.isArray(outcome) ? outcome : [outcome]).forEach((o) => this.report(o)),
        (error: unknown) => this.report({ runId, action: "error", reason: reasonOf(error) }),
      )
      .finally(() => {
        this.inFlight.delete(runId);
        this.nudge(); // a slot is free
      });
    this.inFlight.set(runId, done);
  }

  private report(outcome: WorkerOutcome): void {
    try {
      this.o.onOutcome?.(outcome);
    } catch {
      // a listener's failure is not the worker's
    }
  }

  private async renewLeases(): Promise<void> {
    if (this.claimed.size === 0) return;
    try {
      await queue.renewLeases(this.o.db, this.id, [...this.claimed], await clockOf(this.o), this.leaseMs);
    } catch (error) {
      this.report({ runId: "", action: "error", reason: `lease renewal failed: ${reasonOf(error)}` });
    }
  }

  private skipList(): string[] {
    const nowMs = this.localNow();
    for (const [runId, until] of this.skipped) if (until <= nowMs) this.skipped.delete(runId);
    return [...this.skipped.keys()].slice(-MAX_SKIPPED);
  }

  private sleep(): Promise<void> {
    return new Promise<void>((done) => {
      const timer = setTimeout(finish, Math.max(0, Math.min(this.pollIntervalMs, this.dueInMs ?? Number.POSITIVE_INFINITY)));
      function finish() {
        clearTimeout(timer);
        done();
      }
      this.wakeUp = () => {
        this.wakeUp = undefined;
        finish();
      };
    });
  }

  private async drain(abandon?: AbortSignal): Promise<void> {
    if (this.inFlight.size === 0) return;
    const settled = Promise.allSettled([...this.inFlight.values()]).then(() => undefined);
    if (!abandon) return settled;
    if (abandon.aborted) return;
    await Promise.race([settled, new Promise<void>((done) => abandon.addEventListener("abort", () => done(), { once: true }))]);
  }
}

function positive(value: number, name: string, integer = false): number {
  if (typeof value !== "number" || !(value > 0) || !Number.isFinite(value) || (integer && !Number.isInteger(value))) {
    throw new SmithersError("INVALID_OPTION", `${name} must be a${integer ? " whole" : ""} number > 0, got ${String(value)}`);
  }
  return value;
}

/**
 * Runs a worker until `signal` aborts, then waits for its runs in flight (see Worker.run).
 * @example
 * await runWorker({ db: openSmithersDb(process.env.SMITHERS_DATABASE_URL!), concurrency: 8, signal });
 */
export function runWorker(o: WorkerOptions & { signal: AbortSignal; abandon?: AbortSignal }): Promise<void> {
  return new Worker(o).run(o.signal, o.abandon);
}
