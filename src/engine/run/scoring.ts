/**
 * Scorers of a run's finished attempts, off the critical path: their `pending` rows commit with
 * the attempt's outcome (see pending-scores.ts); once that commit is done each scorer runs on
 * its own (the run loop never awaits it) under a timeout, and its row becomes `scored` or
 * `error`. A scorer's failure is written on its row and touches nothing else. When the run's
 * execution ends, the process also scores the run's rows left `pending` by a process that died,
 * then waits for every scorer it started (each bounded by its timeout).
 */
import { normalizeRow, readOutputRow, scorers as scoreRows, stripBookkeeping, type OutputTableInfo, type SmithersDb } from "../../db/index.ts";
import { describeThrown, SmithersError } from "../../errors/index.ts";
import type { PlanTask } from "../../jsx/index.ts";
import { DEFAULT_SCORER_TIMEOUT_MS, type ScoreResult } from "../../scorers/index.ts";
import { sampledBindings, scoreRowId, scorerInput, type ScoreJob } from "../attempt/index.ts";
import { MAX_TIMER_MS, type Clock } from "../core/index.ts";

/**
 * Scorers still running for child runs (`<Subflow>`), by parent run id. A child's execution hands
 * its scorers here instead of waiting for them, so they never hold up the Subflow task; the
 * parent's execution waits for them at its own end (children run in the parent's process).
 */
const handedOff = new Map<string, Set<Promise<void>>>();

function handOff(parentRunId: string, work: Promise<void>): void {
  let set = handedOff.get(parentRunId);
  if (!set) handedOff.set(parentRunId, (set = new Set()));
  set.add(work);
  const owned = set;
  void work.finally(() => {
    owned.delete(work);
    if (owned.size === 0 && handedOff.get(parentRunId) === owned) handedOff.delete(parentRunId);
  });
}

type Ended = { task: PlanTask; info: OutputTableInfo; runId: string; attempt: number; startedAtMs: number; finishedAtMs: number; output: unknown };

export class ScoreRunner {
  private staged: ScoreJob[] = [];
  private readonly inFlight = new Map<string, Promise<void>>();

  constructor(
    private readonly db: SmithersDb,
    private readonly clock: Clock,
    private readonly now: () => number,
    /** The run this one is a `<Subflow>` child of: its scorers are handed to that run to wait for. */
    private readonly parentRunId?: string,
  ) {}

  get hasStaged(): boolean {
    return this.staged.length > 0;
  }

  /** A finished attempt's scorers, to start once the transaction with their pending rows committed. */
  stage(e: Ended, runInput: unknown): void {
    const key = { runId: e.runId, nodeId: e.task.nodeId, iteration: e.task.iteration, attempt: e.attempt };
    const input = scorerInput(e.task, e.info, runInput, e.output, e.finishedAtMs - e.startedAtMs);
    for (const [name, binding] of sampledBindings(e.task, key)) this.staged.push({ rowId: scoreRowId(key, name), binding, input });
  }

  /** After a commit: the staged scorers start, unawaited. */
  launchStaged(): void {
    for (const job of this.staged.splice(0)) this.launch(job);
  }

  /**
   * Starts the scorers of the run's `pending` rows that no scorer of this process runs: rows a dead
   * process left. A row whose task or binding the last render does not have stays pending.
   */
  async recover(runId: string, tasks: readonly PlanTask[], infoOf: (task: PlanTask) => OutputTableInfo, runInput: unknown): Promise<void> {
    const pending = (await scoreRows.listScores(this.db, { runId, status: "pending" })).filter((r) => !this.inFlight.has(r.id));
    for (const row of pending) {
      const task = tasks.find((t) => t.nodeId === row.nodeId && t.scorers);
      const name = task && Object.keys(task.scorers!).find((n) => scoreRowId(row, n) === row.id);
      if (!task || name === undefined) continue;
      const info = infoOf(task);
      const stored = await this.db.read("readScoredOutput", (q) => readOutputRow(q, info, { runId, nodeId: row.nodeId, iteration: row.iteration }));
      const output = stored ? stripBookkeeping(normalizeRow(stored)) : undefined;
      this.launch({ rowId: row.id, binding: task.scorers![name]!, input: scorerInput(task, info, runInput, output, row.latencyMs ?? undefined) });
    }
  }

  /**
   * Waits for every scorer started so far (each ends by its timeout at the latest), and those its
   * child runs handed over; a child run hands its own to its parent and returns at once.
   */
  async drain(runId: string): Promise<void> {
    this.launchStaged();
    const settled = this.settled(runId);
    if (this.parentRunId === undefined) return await settled;
    handOff(this.parentRunId, settled);
  }

  private async settled(runId: string): Promise<void> {
    while (this.inFlight.size > 0 || (handedOff.get(runId)?.size ?? 0) > 0) {
      await Promise.allSettled([...this.inFlight.values(), ...(handedOff.get(runId) ?? [])]);
    }
  }

  private launch(job: ScoreJob): void {
    if (this.inFlight.has(job.rowId)) return;
    const work = this.score(job)
      .catch(() => undefined) // a row that could not be written stays pending: a later process scores it
      .finally(() => this.inFlight.delete(job.rowId));
    this.inFlight.set(job.rowId, work);
  }

  private async score(job: ScoreJob): Promise<void> {
    const startedAtMs = this.now();
    const end = await this.outcome(job);
    const scoredAtMs = this.now();
    await scoreRows.finishScore(this.db, job.rowId, { ...end, durationMs: Math.max(0, scoredAtMs - startedAtMs), scoredAtMs });
  }

  /** The row's end: `scored` with a checked score, or `error` with `CODE: message`. */
  private async outcome(job: ScoreJob): Promise<Pick<scoreRows.ScoreEnd, "status" | "score" | "reason" | "metaJson" | "error">> {
    const { scorer, timeoutMs = DEFAULT_SCORER_TIMEOUT_MS } = job.binding;
    const controller = new AbortController();
    let timer: unknown;
    const timedOut = new Promise<never>((_, reject) => {
      timer = this.clock.setTimeout(
        () => {
          const error = new SmithersError("SCORER_TIMEOUT", `Scorer "${scorer.id}" did not finish within ${timeoutMs} ms`);
          controller.abort(error);
          reject(error);
        },
        Math.min(timeoutMs, MAX_TIMER_MS),
      );
    });
    const scoring = Promise.resolve().then(() => scorer.score({ ...job.input, signal: controller.signal }));
    scoring.catch(() => undefined); // after a timeout its late rejection is nobody's
    try {
      const result = checked(scorer.id, await Promise.race([scoring, timedOut]));
      return {
        status: "scored",
        score: result.score,
        reason: typeof result.reason === "string" ? result.reason : null,
        metaJson: result.meta === undefined ? null : JSON.stringify(result.meta),
        error: null,
      };
    } catch (thrown) {
      const code = SmithersError.is(thrown, "SCORER_TIMEOUT") || SmithersError.is(thrown, "SCORER_INVALID_SCORE") ? thrown.code : "SCORER_FAILED";
      const message = SmithersError.is(thrown) ? thrown.message : describeThrown(thrown);
      return { status: "error", score: null, reason: null, metaJson: null, error: `${code}: ${message}` };
    } finally {
      this.clock.clearTimeout(timer);
    }
  }
}

/** A score that is a number in 0..1, and a meta that is JSON; else SCORER_INVALID_SCORE. */
function checked(scorerId: string, result: ScoreResult): ScoreResult {
  const score = (result as { score?: unknown } | null | undefined)?.score;
  if (typeof score !== "number" || !(score >= 0 && score <= 1))
    throw new SmithersError(
      "SCORER_INVALID_SCORE",
      `Scorer "${scorerId}" returned ${typeof score === "string" ? JSON.stringify(score) : describeThrown(score)}, not a number in 0..1`,
    );
  if (result.meta !== undefined) {
    try {
      JSON.stringify(result.meta);
    } catch (cause) {
      throw new SmithersError("SCORER_INVALID_SCORE", `Scorer "${scorerId}" returned a meta that is not JSON: ${describeThrown(cause)}`);
    }
  }
  return result;
}
