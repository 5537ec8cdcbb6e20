/**
 * The supervisor: finds runs whose owner stopped heartbeating, claims each by compare-and-swap
 * (so of several supervisors exactly one wins a run), and resumes it under the claimed owner id.
 * A run it cannot resume (no workflow file, a file that no longer loads) has its claim released,
 * so another supervisor, or a person, can take it.
 */
import { events, MISSED_BEATS_BEFORE_STALE, runs, type Durability, type SmithersDb } from "../../db/index.ts";
import { SmithersError } from "../../errors/index.ts";
import { cronOutcomes, fireDueCrons, type CronOutcome } from "./cron-fire.ts";
import type { Clock, Limits, SmithersEvent } from "../core/index.ts";
import { newOwnerId, ownerProcessAlive, RESUME_EVENTS } from "../core/index.ts";
import type { RunResult } from "../run/index.ts";
import { runRoom, workflowRoom } from "./rooms.ts";
import type { SmithersWorkflow } from "../workflow/index.ts";

export type SuperviseOptions = {
  db: SmithersDb;
  /**
   * A `running` run whose heartbeat is older than this is stale (an operator who knows its owner
   * is gone). Default: once it missed MISSED_BEATS_BEFORE_STALE of its own heartbeats.
   */
  staleAfterMs?: number;
  /** The workflow of a stale run; default: import the file the run was started from. */
  resolveWorkflow?: (run: runs.RunRow) => SmithersWorkflow | undefined | Promise<SmithersWorkflow | undefined>;
  now?: () => number;
  /** The clock resumed runs keep time with (RunOptions.clock); also the pass's time when `now` is not given. */
  clock?: Clock;
  onEvent?: (event: SmithersEvent) => void;
  /** The durability resumed runs commit with (see RunOptions.durability). */
  durability?: Durability;
  /** How often resumed runs heartbeat (RunOptions.heartbeatMs); several beats must fit in `staleAfterMs`. */
  heartbeatMs?: number;
  /** A stale run must also have missed this many of its own heartbeats (workers: MISSED_BEATS_BEFORE_STALE). */
  missedBeats?: number;
  /** Limits by key over the workflows' own, for the runs it resumes (RunOptions.limits). */
  limits?: Limits;
};

/** How a pass judges staleness: the threshold given, else the run's own heartbeat interval. */
function staleness(o: SuperviseOptions): { staleAfterMs: number; missedBeats?: number } {
  if (o.staleAfterMs !== undefined) return { staleAfterMs: o.staleAfterMs, ...(o.missedBeats === undefined ? {} : { missedBeats: o.missedBeats }) };
  return { staleAfterMs: 0, missedBeats: o.missedBeats ?? MISSED_BEATS_BEFORE_STALE };
}

export type SuperviseOutcome =
  | { runId: string; action: "resumed"; result: RunResult }
  | { runId: string; action: "released"; reason: string }
  | { runId: string; action: "lost"; reason: string }
  /** Its heartbeat is late but its owner is a live process on this host (e.g. a task blocking the event loop): left alone. */
  | { runId: string; action: "skipped"; reason: string }
  /** Due cron slots fired by the pass (see fireDueCrons). */
  | CronOutcome;

function defaultResolver(run: runs.RunRow): Promise<SmithersWorkflow | undefined> | undefined {
  const path = run.workflowPath;
  return path ? workflowRoom().then((m) => m.loadWorkflowFile(path)) : undefined;
}

/** The time heartbeats are judged by: the injected clock (tests), else the database's (see runs.databaseNow). */
export function clockOf(o: { db: SmithersDb; now?: () => number; clock?: Clock }): Promise<number> {
  if (o.now) return Promise.resolve(o.now());
  return o.clock ? Promise.resolve(o.clock.now()) : runs.databaseNow(o.db);
}

/** Takes a stale run over (compare-and-swap on its owner and heartbeat) and resumes it; resolves when that run settles. */
export async function takeOver(o: SuperviseOptions, run: runs.RunRow, nowMs: number): Promise<SuperviseOutcome> {
  // A late heartbeat is not a dead owner: resuming beside a live one would run its task twice.
  if (ownerProcessAlive(run.runtimeOwnerId) === true) {
    const reason = `its owner ${run.runtimeOwnerId} is still running here; its heartbeat is late (a task may be blocking its event loop)`;
    return { runId: run.runId, action: "skipped", reason };
  }
  const claimOwnerId = newOwnerId();
  const won = await runs.claimRunForResume(o.db, {
    runId: run.runId,
    expectedOwnerId: run.runtimeOwnerId,
    expectedHeartbeatAtMs: run.heartbeatAtMs,
    claimOwnerId,
    nowMs,
    ...staleness(o),
  });
  if (!won) return { runId: run.runId, action: "lost", reason: "another process claimed or heartbeated the run first" };
  // Handing the run back restores its previous owner and heartbeat, so it stays stale and
  // visible to the next pass (or a person) instead of held by a claim nobody acts on.
  const release = async (why: string): Promise<SuperviseOutcome> => {
    await runs.releaseRunResumeClaim(o.db, { runId: run.runId, claimOwnerId, restoreOwnerId: run.runtimeOwnerId, restoreHeartbeatAtMs: run.heartbeatAtMs });
    await noteResumeFailure(o, run.runId, why, claimOwnerId);
    return { runId: run.runId, action: "released", reason: why };
  };
  return resumeClaimed(o, run, claimOwnerId, release);
}

/**
 * Journals a RunResumeFailed on the run, so `ps`, `events` and the dashboard show why it did not
 * go on; the same reason again (a daemon retrying every pass) is not journalled twice in a row.
 * A failure to journal it is not the resume's: the outcome still reports the reason.
 */
async function noteResumeFailure(o: SuperviseOptions, runId: string, reason: string, by: string): Promise<void> {
  try {
    const last = (await events.latestEventsOf(o.db, [runId], RESUME_EVENTS)).get(runId);
    if (last?.type === "RunResumeFailed" && (JSON.parse(last.payloadJson) as { reason?: string }).reason === reason) return;
    await events.insertEvent(o.db, {
      runId,
      timestampMs: o.now ? o.now() : o.clock ? o.clock.now() : Date.now(),
      type: "RunResumeFailed",
      payloadJson: JSON.stringify({ reason, by }),
    });
  } catch {
    // the database refused: the outcome (logged by the daemon) still says why
  }
}

/** Resumes a run this process has claimed; hands it back with `release` when it cannot. */
async function resumeClaimed(
  o: SuperviseOptions,
  run: runs.RunRow,
  claimOwnerId: string,
  release: (why: string) => Promise<SuperviseOutcome>,
): Promise<SuperviseOutcome> {
  let workflow: SmithersWorkflow | undefined;
  let reason = "no workflow file is recorded for this run";
  try {
    workflow = await (o.resolveWorkflow ?? defaultResolver)(run);
  } catch (error) {
    reason = error instanceof SmithersError ? `${error.code}: ${error.message}` : String(error);
  }
  if (!workflow) return release(reason);
  try {
    const { runWorkflow } = await runRoom();
    const result = await runWorkflow(workflow, {
      runId: run.runId,
      resume: true,
      dbPath: o.db.target,
      ownerId: claimOwnerId,
      onEvent: o.onEvent,
      durability: o.durability,
      heartbeatMs: o.heartbeatMs,
      ...(o.clock ? { clock: o.clock } : {}),
      ...(o.limits ? { limits: o.limits } : {}),
    });
    return { runId: run.runId, action: "resumed", result };
  } catch (error) {
    return release(error instanceof SmithersError ? `${error.code}: ${error.message}` : String(error));
  }
}

/**
 * Waiting runs whose wait is over: a decision, an answer or a signal arrived (each marks its run
 * due when stored), or a timer or timeout is due. One indexed range per waiting status. Without a
 * custom resolver, runs with no workflow file are left out: they could only be claimed and handed
 * back on every pass, crowding out the rest.
 */
function wakeable(o: SuperviseOptions, nowMs: number): Promise<runs.RunRow[]> {
  return runs.listDueRuns(o.db, nowMs, 500, o.resolveWorkflow === undefined);
}

/** Wakes a waiting run that is due: claims it by compare-and-swap on its status, then resumes it. */
export async function wake(o: SuperviseOptions, run: runs.RunRow, nowMs: number): Promise<SuperviseOutcome> {
  const claimOwnerId = newOwnerId();
  const won = await runs.claimWaitingRun(o.db, { runId: run.runId, fromStatus: run.status, claimOwnerId, nowMs });
  if (!won) return { runId: run.runId, action: "lost", reason: "another process woke the run first" };
  const release = async (why: string): Promise<SuperviseOutcome> => {
    await runs.releaseWaitingClaim(o.db, { runId: run.runId, claimOwnerId, status: run.status, wakeAtMs: run.wakeAtMs });
    await noteResumeFailure(o, run.runId, why, claimOwnerId);
    return { runId: run.runId, action: "released", reason: why };
  };
  return resumeClaimed(o, run, claimOwnerId, release);
}

/**
 * One pass: claims every stale run it can and resumes each, and starts due cron slots;
 * resolves once those runs settled.
 * @example
 * const outcomes = await supervise({ db: openSmithersDb("smithers.db") });
 */
export async function supervise(o: SuperviseOptions): Promise<SuperviseOutcome[]> {
  const nowMs = await clockOf(o);
  const stale = await runs.listStaleRuns(o.db, { nowMs, ...staleness(o) });
  const started: Promise<SuperviseOutcome>[] = [];
  for (const run of stale) started.push(takeOver(o, run, nowMs));
  for (const run of await wakeable(o, nowMs)) started.push(wake(o, run, nowMs));
  const fires = await fireDueCrons({ db: o.db, now: () => nowMs, onEvent: o.onEvent, durability: o.durability, ...(o.clock ? { clock: o.clock } : {}) });
  const cron = Promise.all(fires.map(async (f) => cronOutcomes(f, f.action === "started" ? await f.result : undefined)));
  return [...(await Promise.all(started)), ...(await cron).flat()];
}

/**
 * Passes every `intervalMs` until `signal` aborts; runs resumed by one pass keep going while
 * later passes look for more. On abort it stops looking and resolves at once: runs it resumed
 * keep running in this process, and if the process exits they go stale and are found again.
 */
export async function superviseForever(
  o: SuperviseOptions & { intervalMs: number; signal: AbortSignal; onOutcome?: (o: SuperviseOutcome) => void },
): Promise<void> {
  while (!o.signal.aborted) {
    const nowMs = await clockOf(o);
    const stale = await runs.listStaleRuns(o.db, { nowMs, ...staleness(o) });
    // A claim or release that fails (the database stayed busy) is reported; the next pass retries.
    const report = (run: runs.RunRow, outcome: Promise<SuperviseOutcome>) =>
      void outcome
        .catch(
          (error: unknown): SuperviseOutcome => ({
            runId: run.runId,
            action: "lost",
            reason: error instanceof SmithersError ? `${error.code}: ${error.message}` : String(error),
          }),
        )
        .then((result) => o.onOutcome?.(result));
    for (const run of stale) report(run, takeOver(o, run, nowMs));
    for (const run of await wakeable(o, nowMs)) report(run, wake(o, run, nowMs));
    // Cron runs are reported as they start and go on in this process, like resumed ones.
    void fireDueCrons({ db: o.db, now: () => nowMs, onEvent: o.onEvent, durability: o.durability, ...(o.clock ? { clock: o.clock } : {}) }).then(
      (fires) => fires.flatMap((f) => cronOutcomes(f)).forEach((outcome) => o.onOutcome?.(outcome)),
      (error: unknown) =>
        o.onOutcome?.({
          runId: "",
          cronId: "*",
          action: "cron-failed",
          reason: error instanceof SmithersError ? `${error.code}: ${error.message}` : String(error),
        }),
    );
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, o.intervalMs);
      o.signal.addEventListener(
        "abort",
        () => {
          clearTimeout(timer);
          resolve();
        },
        { once: true },
      );
    });
  }
}
