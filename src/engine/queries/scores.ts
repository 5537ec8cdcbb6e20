/** The scores read model of `smithers scores`: a run's scorer rows (as GET /runs/:id/scores) with min and max beside each scorer's summary. */
import type { RunScoresReport, ScorerStats, TaskScore } from "../../contract/index.ts";
import { runs, type SmithersDb } from "../../db/index.ts";
import { SmithersError } from "../../errors/index.ts";
import { latestByTask, scoreRowsOfRun, scorerSummaries } from "./compare.ts";

/** scorerSummaries, each with the lowest and highest of the scores it averages. */
export function scorerStats(scores: TaskScore[]): ScorerStats[] {
  const range = new Map<string, { min: number; max: number }>();
  for (const perScorer of latestByTask(scores).values()) {
    for (const s of perScorer.values()) {
      if (s.status !== "scored" || s.score === null) continue;
      const r = range.get(s.scorerId);
      range.set(s.scorerId, r ? { min: Math.min(r.min, s.score), max: Math.max(r.max, s.score) } : { min: s.score, max: s.score });
    }
  }
  return scorerSummaries(scores).map((s) => ({ ...s, min: range.get(s.scorerId)?.min ?? null, max: range.get(s.scorerId)?.max ?? null }));
}

/**
 * A run's scores, ordered by node, iteration, attempt and scorer; `nodeId` narrows to one task.
 * Throws RUN_NOT_FOUND for an unknown run.
 */
export async function runScores(db: SmithersDb, runId: string, opts: { nodeId?: string } = {}): Promise<RunScoresReport> {
  if (!(await runs.getRun(db, runId))) throw new SmithersError("RUN_NOT_FOUND", `No run "${runId}" in ${db.path}`, { runId });
  const scores = (await scoreRowsOfRun(db, runId))
    .filter((s) => opts.nodeId === undefined || s.nodeId === opts.nodeId)
    .sort((a, b) => a.nodeId.localeCompare(b.nodeId) || a.iteration - b.iteration || a.attempt - b.attempt || a.scorerId.localeCompare(b.scorerId));
  return { runId, scores, summary: scorerStats(scores) };
}
