/**
 * What the runs list's runs-over-time chart reads: the times of recent runs, and agent spend per
 * UTC day. Both start from the runs created in the window (the `_smithers_runs_created_idx` range);
 * spend then joins each run's attempts by their key.
 */
import { and, gte, isNotNull, sql } from "drizzle-orm/sql";
import { eq } from "drizzle-orm/sql";
import { smithersAttempts, smithersRuns } from "../internal-schema.ts";
import type { SmithersDb } from "../store.ts";

export type RunTimesRow = { status: string; startedAtMs: number | null; finishedAtMs: number | null };

/** Status, start and end of every run created at or after `sinceMs`. */
export function runTimesSince(db: SmithersDb, sinceMs: number): Promise<RunTimesRow[]> {
  return db.read("runTimesSince", (q) =>
    q.orm
      .select({ status: smithersRuns.status, startedAtMs: smithersRuns.startedAtMs, finishedAtMs: smithersRuns.finishedAtMs })
      .from(smithersRuns)
      .where(gte(smithersRuns.createdAtMs, sinceMs))
      .all(),
  );
}

const DAY_MS = 86_400_000;

/** Cost the attempts of runs created at or after `sinceMs` reported, summed per UTC day of the attempt's start. */
export function spendPerDaySince(db: SmithersDb, sinceMs: number): Promise<{ dayMs: number; costUsd: number }[]> {
  const day = sql<number>`(${smithersAttempts.startedAtMs} / ${sql.raw(String(DAY_MS))}) * ${sql.raw(String(DAY_MS))}`;
  return db.read("spendPerDaySince", async (q) => {
    const rows = await q.orm
      .select({ dayMs: day, costUsd: sql<number>`sum(${smithersAttempts.costUsd})` })
      .from(smithersRuns)
      .innerJoin(smithersAttempts, eq(smithersAttempts.runId, smithersRuns.runId))
      .where(and(gte(smithersRuns.createdAtMs, sinceMs), isNotNull(smithersAttempts.costUsd)))
      .groupBy(day)
      .all();
    // PostgreSQL returns bigint and numeric sums as strings.
    return rows.map((r) => ({ dayMs: Number(r.dayMs), costUsd: Number(r.costUsd) })).sort((a, b) => a.dayMs - b.dayMs);
  });
}
