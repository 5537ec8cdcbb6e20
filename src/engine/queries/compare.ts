/**
 * Two runs side by side, task by task (`smithers eval compare`, GET /runs/:a/compare/:b, the
 * dashboard's compare view), and a run's scores (GET /runs/:id/scores, the run page). Tasks are
 * matched by node id and iteration; a task's scores are its latest scored attempt's.
 */
import type {
  ComparedTask,
  CompareSide,
  CompareSideTotals,
  InspectReport,
  RunComparison,
  ScoreCell,
  ScoreMean,
  ScorerSummary,
  ScoreStatus,
  ScoreValue,
  TaskScore,
} from "../../contract/index.ts";
import { loadStoredOutputs, nodes as nodeRows, scorers, type SmithersDb } from "../../db/index.ts";
import { inspectRun } from "./inspect.ts";

const key = (nodeId: string, iteration: number) => `${nodeId}#${iteration}`;

/** Scorers in a stable order wherever they are listed: by name, then id. */
const byScorerName = (x: { scorerName: string; scorerId: string }, y: { scorerName: string; scorerId: string }) =>
  x.scorerName.localeCompare(y.scorerName) || x.scorerId.localeCompare(y.scorerId);

/** Every score row of a run, in the order recorded (none for a run not stored: callers check the run first). */
export async function scoreRowsOfRun(db: SmithersDb, runId: string): Promise<TaskScore[]> {
  const rows = await scorers.listScores(db, { runId });
  return rows.map((r) => ({
    nodeId: r.nodeId,
    iteration: r.iteration,
    attempt: r.attempt,
    scorerId: r.scorerId,
    scorerName: r.scorerName,
    status: r.status as ScoreStatus,
    score: r.score,
    reason: r.reason,
    error: r.error,
    latencyMs: r.latencyMs,
    durationMs: r.durationMs,
    scoredAtMs: r.scoredAtMs,
  }));
}

/** Per task, per scorer: the row of its latest attempt (a retry's score replaces the failed attempt's). */
export function latestByTask(scores: TaskScore[]): Map<string, Map<string, TaskScore>> {
  const byTask = new Map<string, Map<string, TaskScore>>();
  for (const s of scores) {
    const k = key(s.nodeId, s.iteration);
    const scorersOf = byTask.get(k) ?? new Map<string, TaskScore>();
    const seen = scorersOf.get(s.scorerId);
    if (!seen || s.attempt >= seen.attempt) scorersOf.set(s.scorerId, s);
    byTask.set(k, scorersOf);
  }
  return byTask;
}

/**
 * Each scorer over a run: the mean of its tasks' latest scores, with the pending and failed ones
 * counted apart (what `smithers eval` shows per case).
 */
export function scorerSummaries(scores: TaskScore[]): ScorerSummary[] {
  const by = new Map<string, ScorerSummary & { sum: number }>();
  for (const perScorer of latestByTask(scores).values()) {
    for (const s of perScorer.values()) {
      const m = by.get(s.scorerId) ?? { scorerId: s.scorerId, scorerName: s.scorerName, mean: null, scored: 0, pending: 0, errors: 0, sum: 0 };
      if (s.status === "pending") m.pending++;
      else if (s.status === "error" || s.score === null) m.errors++;
      else {
        m.scored++;
        m.sum += s.score;
        m.mean = m.sum / m.scored;
      }
      by.set(s.scorerId, m);
    }
  }
  return [...by.values()].map(({ sum: _, ...summary }) => summary).toSorted(byScorerName);
}

const sideScore = (s: TaskScore | undefined): ScoreValue | null => (s ? { status: s.status, score: s.score, reason: s.reason, error: s.error } : null);

/** B minus A, rounded away from float noise; null unless both are numbers. */
function delta(a: number | null | undefined, b: number | null | undefined): number | null {
  if (typeof a !== "number" || typeof b !== "number") return null;
  return Math.round((b - a) * 1e9) / 1e9;
}

function mean(values: number[]): number | null {
  return values.length === 0 ? null : values.reduce((x, y) => x + y, 0) / values.length;
}

type Side = { report: InspectReport; outputs: Map<string, Record<string, unknown>>; scores: Map<string, Map<string, TaskScore>> };

async function readSide(db: SmithersDb, runId: string): Promise<Side> {
  const report = await inspectRun(db, runId); // RUN_NOT_FOUND for an unknown run
  const keys = (await nodeRows.listNodes(db, runId)).filter((n) => n.outputTable);
  const [outputs, scores] = await Promise.all([loadStoredOutputs(db, runId, keys), scoreRowsOfRun(db, runId)]);
  return { report, outputs, scores: latestByTask(scores) };
}

function sideOf(s: Side, nodeId: string, iteration: number): CompareSide | null {
  const n = s.report.nodes.find((x) => x.nodeId === nodeId && x.iteration === iteration);
  if (!n) return null;
  return {
    state: n.state,
    attempts: n.attempts,
    durationMs: n.durationMs,
    usage: n.usage,
    error: n.error,
    output: s.outputs.get(key(nodeId, iteration)) ?? null,
  };
}

function totalsOf(s: Side): CompareSideTotals {
  const r = s.report;
  return {
    runId: r.runId,
    workflowName: r.workflowName,
    status: r.status,
    tasks: r.nodes.length,
    finished: r.nodes.filter((n) => n.state === "finished").length,
    taskDurationMs: r.nodes.reduce((sum, n) => sum + n.durationMs, 0),
    runDurationMs: r.startedAtMs !== null && r.finishedAtMs !== null ? r.finishedAtMs - r.startedAtMs : null,
    usage: r.usage,
  };
}

/** The scorers of a task in either run, each with both sides' latest result. */
function scoreCells(a: Map<string, TaskScore> | undefined, b: Map<string, TaskScore> | undefined): ScoreCell[] {
  const ids = [...new Set([...(a?.keys() ?? []), ...(b?.keys() ?? [])])];
  const cells = ids.map((scorerId) => {
    const x = a?.get(scorerId);
    const y = b?.get(scorerId);
    return { scorerId, scorerName: (x ?? y)!.scorerName, a: sideScore(x), b: sideScore(y), delta: delta(x?.score, y?.score) };
  });
  return cells.toSorted(byScorerName);
}

/** Each scorer's mean over the tasks it scored in each run (pending and failed results left out). */
function scoreMeans(tasks: ComparedTask[]): ScoreMean[] {
  const by = new Map<string, { name: string; a: number[]; b: number[] }>();
  for (const t of tasks) {
    for (const c of t.scores) {
      const m = by.get(c.scorerId) ?? { name: c.scorerName, a: [], b: [] };
      if (typeof c.a?.score === "number") m.a.push(c.a.score);
      if (typeof c.b?.score === "number") m.b.push(c.b.score);
      by.set(c.scorerId, m);
    }
  }
  return [...by]
    .map(([scorerId, m]) => {
      const a = mean(m.a);
      const b = mean(m.b);
      return { scorerId, scorerName: m.name, a, b, delta: delta(a, b) };
    })
    .toSorted(byScorerName);
}

/**
 * Runs A and B task by task: A's tasks in plan order, then those only B has. Runs of different
 * workflows are compared all the same (their tasks rarely match), with a warning saying so.
 * @example
 * const c = await compareRuns(db, "run-sonnet", "run-sonnet-fork");
 * c.tasks.filter((t) => t.presence === "both").map((t) => t.scores);
 */
export async function compareRuns(db: SmithersDb, runA: string, runB: string): Promise<RunComparison> {
  const [a, b] = await Promise.all([readSide(db, runA), readSide(db, runB)]);
  const order: { nodeId: string; iteration: number }[] = [...a.report.nodes];
  const inA = new Set(a.report.nodes.map((n) => key(n.nodeId, n.iteration)));
  for (const n of b.report.nodes) if (!inA.has(key(n.nodeId, n.iteration))) order.push(n);
  const tasks = order.map(({ nodeId, iteration }): ComparedTask => {
    const sa = sideOf(a, nodeId, iteration);
    const sb = sideOf(b, nodeId, iteration);
    const k = key(nodeId, iteration);
    return { nodeId, iteration, presence: sa && sb ? "both" : sa ? "only-a" : "only-b", a: sa, b: sb, scores: scoreCells(a.scores.get(k), b.scores.get(k)) };
  });
  const warnings =
    a.report.workflowName === b.report.workflowName
      ? []
      : [`the runs are of different workflows (${a.report.workflowName} and ${b.report.workflowName}): only tasks with the same id are matched`];
  return { a: totalsOf(a), b: totalsOf(b), warnings, tasks, scoreMeans: scoreMeans(tasks) };
}
