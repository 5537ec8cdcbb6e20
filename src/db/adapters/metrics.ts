/**
 * What a metrics scrape reads from the database: the runs not ended, per status, and the queue's
 * depth, each an indexed count (`_smithers_runs_status_*`, `_smithers_queue_order_idx`) that
 * touches only the runs counted, so a scrape costs the same beside a hundred ended runs as beside
 * a million; and one attempt's usage, read when the attempt ends.
 */
import { and, count, eq, inArray, isNull } from "drizzle-orm/sql";
import { smithersAttempts, smithersQueue, smithersRuns } from "../internal-schema.ts";
import type { SmithersDb } from "../store.ts";

export type MetricsSnapshot = { runsByStatus: Map<string, number>; queueDepth: number };

/** Counts the runs in each of `statuses` (those with none are absent) and the requests no worker has claimed. */
export function readMetricsSnapshot(db: SmithersDb, statuses: readonly string[]): Promise<MetricsSnapshot> {
  return db.read("readMetricsSnapshot", async (q) => {
    const rows = await q.orm
      .select({ status: smithersRuns.status, n: count() })
      .from(smithersRuns)
      .where(inArray(smithersRuns.status, [...statuses]))
      .groupBy(smithersRuns.status)
      .all();
    const waiting = (await q.orm.select({ n: count() }).from(smithersQueue).where(isNull(smithersQueue.startedAtMs)).get())?.n ?? 0;
    return { runsByStatus: new Map(rows.map((r) => [r.status, Number(r.n)])), queueDepth: Number(waiting) };
  });
}

export type AttemptUsageRow = {
  workflowName: string | null;
  agentModel: string | null;
  inputTokens: number | null;
  cachedInputTokens: number | null;
  outputTokens: number | null;
  costUsd: number | null;
};

/** One attempt's agent usage and its run's workflow (undefined: no such attempt). */
export function readAttemptUsage(
  db: SmithersDb,
  key: { runId: string; nodeId: string; iteration: number; attempt: number },
): Promise<AttemptUsageRow | undefined> {
  return db.read("readAttemptUsage", async (q) =>
    q.orm
      .select({
        workflowName: smithersRuns.workflowName,
        agentModel: smithersAttempts.agentModel,
        inputTokens: smithersAttempts.inputTokens,
        cachedInputTokens: smithersAttempts.cachedInputTokens,
        outputTokens: smithersAttempts.outputTokens,
        costUsd: smithersAttempts.costUsd,
      })
      .from(smithersAttempts)
      .leftJoin(smithersRuns, eq(smithersRuns.runId, smithersAttempts.runId))
      .where(
        and(
          eq(smithersAttempts.runId, key.runId),
          eq(smithersAttempts.nodeId, key.nodeId),
          eq(smithersAttempts.iteration, key.iteration),
          eq(smithersAttempts.attempt, key.attempt),
        ),
      )
      .get(),
  );
}
