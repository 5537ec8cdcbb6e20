/** The scores read model: a run's scorer rows per attempt and a per-scorer summary (`smithers scores`, the dashboard). */
import type { RunScores, ScoreReport, ScorerSummary } from "../../contract/index.ts";
import { runs, scorers, type SmithersDb } from "../../db/index.ts";
import { SmithersError } from "../../errors/index.ts";

/** One row as the contract shows it; a meta that is not a JSON object reads as null. */
export function scoreReport(row: scorers.ScoreRow): ScoreReport {
  let meta: Record<string, unknown> | null = null;
  if (row.metaJson) {
    const parsed: unknown = JSON.parse(row.metaJson);
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) meta = parsed as Record<string, unknown>;
  }
  return {
    nodeId: row.nodeId,
    iteration: row.iteration,
    attempt: row.attempt,
    scorerId: row.scorerId,
    scorerName: row.scorerName,
    source: row.source,
    status: row.status as ScoreReport["status"],
    score: row.score,
    reason: row.reason,
    meta,
    error: row.error,
    latencyMs: row.latencyMs,
    durationMs: row.durationMs,
    scoredAtMs: row.scoredAtMs,
  };
}

/** Count, mean, min and max of each scorer's scored rows, in the order scorers first appear. */
export function summarizeScores(scores: ScoreReport[]): ScorerSummary[] {
  const byScorer = new Map<string, ScorerSummary & { sum: number }>();
  for (const s of scores) {
    let acc = byScorer.get(s.scorerId);
    if (!acc) {
      acc = { scorerId: s.scorerId, scorerName: s.scorerName, count: 0, mean: null, min: null, max: null, pending: 0, errors: 0, sum: 0 };
      byScorer.set(s.scorerId, acc);
    }
    if (s.status === "pending") acc.pending++;
    else if (s.status === "error" || s.score === null) acc.errors++;
    else {
      acc.count++;
      acc.sum += s.score;
      acc.min = acc.min === null ? s.score : Math.min(acc.min, s.score);
      acc.max = acc.max === null ? s.score : Math.max(acc.max, s.score);
    }
  }
  return [...byScorer.values()].map(({ sum, ...s }) => ({ ...s, mean: s.count > 0 ? sum / s.count : null }));
}

/**
 * A run's scores, ordered by node, iteration, attempt and scorer; `nodeId` narrows to one task.
 * Throws RUN_NOT_FOUND for an unknown run.
 */
export async function runScores(db: SmithersDb, runId: string, opts: { nodeId?: string } = {}): Promise<RunScores> {
  const run = await runs.getRun(db, runId);
  if (!run) throw new SmithersError("RUN_NOT_FOUND", `No run "${runId}" in ${db.path}`, { runId });
  const rows = await scorers.listScores(db, { runId, ...(opts.nodeId !== undefined ? { nodeId: opts.nodeId } : {}) });
  const scores = rows
    .map(scoreReport)
    .sort((a, b) => a.nodeId.localeCompare(b.nodeId) || a.iteration - b.iteration || a.attempt - b.attempt || a.scorerId.localeCompare(b.scorerId));
  return { runId, scores, summary: summarizeScores(scores) };
}
