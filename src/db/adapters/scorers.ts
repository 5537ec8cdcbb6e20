/** `_smithers_scorers`: scorer results per task attempt (score, reason, latency). */
import type { InferInsertModel, InferSelectModel } from "drizzle-orm";
import { and, asc, eq, type SQL } from "drizzle-orm/sql";
import { smithersScorers } from "../internal-schema.ts";
import type { SmithersDb } from "../store.ts";
import { sqlNames } from "./shared.ts";
import type { Sql } from "../sql.ts";

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

/** Scores of a run, optionally of one node / iteration / attempt / scorer / status, in the order recorded. */
export function listScores(
  db: SmithersDb,
  filter: { runId: string; nodeId?: string; iteration?: number; attempt?: number; scorerId?: string; status?: string },
): Promise<ScoreRow[]> {
  const conditions: SQL[] = [eq(smithersScorers.runId, filter.runId)];
  if (filter.nodeId !== undefined) conditions.push(eq(smithersScorers.nodeId, filter.nodeId));
  if (filter.iteration !== undefined) conditions.push(eq(smithersScorers.iteration, filter.iteration));
  if (filter.attempt !== undefined) conditions.push(eq(smithersScorers.attempt, filter.attempt));
  if (filter.scorerId !== undefined) conditions.push(eq(smithersScorers.scorerId, filter.scorerId));
  if (filter.status !== undefined) conditions.push(eq(smithersScorers.status, filter.status));
  return db.read("listScores", (q) =>
    q.orm
      .select()
      .from(smithersScorers)
      .where(and(...conditions))
      .orderBy(asc(smithersScorers.scoredAtMs), asc(smithersScorers.id))
      .all(),
  );
}

/**
 * Inside the transaction that records an attempt's outcome: one `pending` row per sampled scorer,
 * so a crash before the scorer ran leaves a row the next process scores.
 */
export async function insertPendingScores(q: Sql, rows: NewScoreRow[]): Promise<void> {
  if (rows.length === 0) return;
  await q.orm
    .insert(smithersScorers)
    .values(rows.map((r) => ({ ...r, status: "pending", score: null })))
    .onConflictDoNothing()
    .run();
}

/** What a scorer's end writes: its score (status `scored`) or its error (status `error`). */
export type ScoreEnd = Pick<NewScoreRow, "status" | "score" | "reason" | "metaJson" | "error" | "durationMs" | "scoredAtMs">;

const FINISH_PENDING = (() => {
  const c = sqlNames(smithersScorers);
  return `UPDATE ${c.$table} SET ${c.status} = ?, ${c.score} = ?, ${c.reason} = ?, ${c.metaJson} = ?, ${c.error} = ?, ${c.durationMs} = ?, ${c.scoredAtMs} = ?
    WHERE ${c.id} = ? AND ${c.status} = 'pending'`;
})();

/** Ends a pending row; a row already ended (by another process that scored it too) is left as it is. Returns whether it ended it. */
export function finishScore(db: SmithersDb, id: string, end: ScoreEnd): Promise<boolean> {
  return db.write("finishScore", async (q) => {
    const changed = await q.run(
      FINISH_PENDING,
      end.status,
      end.score ?? null,
      end.reason ?? null,
      end.metaJson ?? null,
      end.error ?? null,
      end.durationMs ?? null,
      end.scoredAtMs,
      id,
    );
    return changed > 0;
  });
}
