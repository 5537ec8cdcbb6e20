/**
 * The JSON shapes of a run's scores and of two runs compared task by task (`smithers eval compare
 * --json`, GET /runs/:id/scores, GET /runs/:a/compare/:b, the dashboard's compare view).
 */
import type { ErrorSummary, Usage } from "./index.ts";

/** Where a scorer's result stands: recorded with the attempt and not scored yet, scored, or failed. */
export type ScoreStatus = "pending" | "scored" | "error";

/** One scorer's result on one attempt of a task, as `_smithers_scorers` holds it. */
export type TaskScore = {
  nodeId: string;
  iteration: number;
  attempt: number;
  scorerId: string;
  scorerName: string;
  status: ScoreStatus;
  /** 0..1 once scored; null while pending or when the scorer failed. */
  score: number | null;
  reason: string | null;
  /** `CODE: message` of a scorer that threw, timed out or returned a value outside 0..1. */
  error: string | null;
  latencyMs: number | null;
  durationMs: number | null;
  scoredAtMs: number;
};

/** GET /runs/:id/scores. */
export type RunScores = { runId: string; scores: TaskScore[] };

/** One side of a compared task: what it did in that run. */
export type CompareSide = {
  state: string;
  attempts: number;
  /** Time spent in its attempts, in ms. */
  durationMs: number;
  usage: Usage | null;
  error: ErrorSummary | null;
  /** Its output row as stored (without run, node and iteration), null when it wrote none. */
  output: Record<string, unknown> | null;
};

/** A scorer's result on one side: its latest attempt's. */
export type ScoreValue = { status: ScoreStatus; score: number | null; reason: string | null; error: string | null };

/** One scorer on one task in both runs; `delta` is B minus A when both are scored. */
export type ScoreCell = { scorerId: string; scorerName: string; a: ScoreValue | null; b: ScoreValue | null; delta: number | null };

/** One task (node id and iteration) of either run. */
export type ComparedTask = {
  nodeId: string;
  iteration: number;
  /** In both runs, or only in run A or only in run B. */
  presence: "both" | "only-a" | "only-b";
  a: CompareSide | null;
  b: CompareSide | null;
  scores: ScoreCell[];
};

/** A run's totals: its tasks, their time, its usage. */
export type CompareSideTotals = {
  runId: string;
  workflowName: string;
  status: string;
  tasks: number;
  finished: number;
  /** Sum of its tasks' attempt time, in ms. */
  taskDurationMs: number;
  /** From start to end; null while it has not ended. */
  runDurationMs: number | null;
  usage: Usage;
};

/** A scorer's mean over the tasks it scored in each run; `delta` B minus A. */
export type ScoreMean = { scorerId: string; scorerName: string; a: number | null; b: number | null; delta: number | null };

/** `smithers eval compare A B --json`, GET /runs/:a/compare/:b. */
export type RunComparison = {
  a: CompareSideTotals;
  b: CompareSideTotals;
  /** Notes on the comparison itself, e.g. that the runs are of different workflows. */
  warnings: string[];
  tasks: ComparedTask[];
  scoreMeans: ScoreMean[];
};

/** A scorer over a whole run (each task's latest attempt): the mean of its scores and how many are still pending or failed. */
export type ScorerSummary = { scorerId: string; scorerName: string; mean: number | null; scored: number; pending: number; errors: number };

/** `0.800`, `pending`, `error (CODE: message)`, `-` when the scorer did not score that side: one cell of a score, in the CLI and the dashboard. */
export function scoreText(v: { status: ScoreStatus; score: number | null; error: string | null } | null): string {
  if (v === null) return "-";
  if (v.status === "pending") return "pending";
  if (v.status === "error" || v.score === null) return `error${v.error ? ` (${v.error})` : ""}`;
  return v.score.toFixed(3);
}

/** A change in score as ` (+0.200)`; empty when there is none to show. */
export const scoreDelta = (d: number | null): string => (d === null ? "" : ` (${d >= 0 ? "+" : ""}${d.toFixed(3)})`);
