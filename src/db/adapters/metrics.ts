/**
 * What a metrics scrape reads from the database: runs per status and the queue's depth, each one
 * indexed count (`_smithers_runs_status_*` and `_smithers_queue_order_idx`), so a scrape costs the
 * same on a database of a hundred runs as on one of a hundred thousand finished ones; and one
 * attempt's usage, read when the attempt ends.
 */
import { and, count, eq, isNull } from "drizzle-orm";
import { smithersAttempts, smithersQueue, smithersRuns } from "../internal-schema.ts";
import type { SmithersDb } from "../store.ts";

export type MetricsSnapshot = { runsByStatus: Map<string, number>; queueDepth: number };

export function readMetricsSnapshot(db: SmithersDb): Promise<MetricsSnapshot> {
  return db.read("readMetricsSnapshot", async (q) => {
    const rows = await q.orm.select({ status: smithersRuns.status, n: count() }).from(smithersRuns).groupBy(smithersRuns.status).all();
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
