/** `_smithers_scorers`: scorer results per task attempt (score, reason, latency). */
import { and, asc, eq, type InferInsertModel, type InferSelectModel, type SQL } from "drizzle-orm";
import { smithersScorers } from "../internal-schema.ts";
import type { SmithersDb } from "../store.ts";

export type ScoreRow = InferSelectModel<typeof smithersScorers>;
export type NewScoreRow = InferInsertModel<typeof smithersScorers>;

/**
 * Stores one scorer result; the `id` makes re-recording the same result (a retried write) a no-op.
 * @example
 * await insertScore(db, { id, runId, nodeId: "write", scorerId: "len", scorerName: "Length", score: 0.8, scoredAtMs: Date.now() });
 */
export function insertScore(db: SmithersDb, row: NewScoreRow): Promise<void> {
  return db.write("insertScore", async (q) => {
    await q.orm.insert(smithersScorers).values(row).onConflictDoNothing().run();
  });
}

/** Scores of a run, optionally of one node / iteration / attempt / scorer, in the order recorded. */
export function listScores(
  db: SmithersDb,
  filter: { runId: string; nodeId?: string; iteration?: number; attempt?: number; scorerId?: string },
): Promise<ScoreRow[]> {
  const conditions: SQL[] = [eq(smithersScorers.runId, filter.runId)];
  if (filter.nodeId !== undefined) conditions.push(eq(smithersScorers.nodeId, filter.nodeId));
  if (filter.iteration !== undefined) conditions.push(eq(smithersScorers.iteration, filter.iteration));
  if (filter.attempt !== undefined) conditions.push(eq(smithersScorers.attempt, filter.attempt));
  if (filter.scorerId !== undefined) conditions.push(eq(smithersScorers.scorerId, filter.scorerId));
  return db.read("listScores", (q) =>
    q.orm
      .select()
      .from(smithersScorers)
      .where(and(...conditions))
      .orderBy(asc(smithersScorers.scoredAtMs), asc(smithersScorers.id))
      .all(),
  );
}
