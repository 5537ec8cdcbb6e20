/** `_smithers_nodes`: the current state of each task node (run, node, iteration). */
import type { InferInsertModel, InferSelectModel } from "drizzle-orm";
import { and, count, eq, inArray, sql } from "drizzle-orm/sql";
import { changedRows, combinable, insertSql, sqlNames } from "./shared.ts";
import { smithersNodes } from "../internal-schema.ts";
import type { Sql } from "../sql.ts";
import type { SmithersDb } from "../store.ts";

export type NodeRow = InferSelectModel<typeof smithersNodes>;
export type NodeUpsert = InferInsertModel<typeof smithersNodes>;

const N = sqlNames(smithersNodes);

const UPSERT_NODE =
  combinable(`${insertSql(smithersNodes, ["runId", "nodeId", "iteration", "state", "lastAttempt", "updatedAtMs", "outputTable", "label", "wakeAtMs", "waitJson", "errorJson", "defSig"])}
  ON CONFLICT (${N.runId}, ${N.nodeId}, ${N.iteration}) DO UPDATE SET ${N.state} = excluded.${N.state},
    ${N.lastAttempt} = coalesce(excluded.${N.lastAttempt}, ${N.$table}.${N.lastAttempt}), ${N.updatedAtMs} = excluded.${N.updatedAtMs},
    ${N.outputTable} = excluded.${N.outputTable}, ${N.label} = excluded.${N.label}, ${N.wakeAtMs} = excluded.${N.wakeAtMs},
    ${N.waitJson} = excluded.${N.waitJson}, ${N.errorJson} = excluded.${N.errorJson},
    ${N.defSig} = coalesce(excluded.${N.defSig}, ${N.$table}.${N.defSig})`);

/**
 * Insert or update one node row (a missing lastAttempt keeps the stored one; a missing
 * errorJson clears it: only a failed node has one; a missing defSig keeps the stored one). Takes the Drizzle handle so it joins the
 * caller's transaction.
 */
export function upsertNode(q: Sql, row: NodeUpsert): Promise<unknown> {
  return q.run(
    UPSERT_NODE,
    row.runId,
    row.nodeId,
    row.iteration ?? 0,
    row.state,
    row.lastAttempt ?? null,
    row.updatedAtMs,
    row.outputTable,
    row.label ?? null,
    row.wakeAtMs ?? null,
    row.waitJson ?? null,
    row.errorJson ?? null,
    row.defSig ?? null,
  );
}

export function listNodes(db: SmithersDb, runId: string): Promise<NodeRow[]> {
  return db.read("listNodes", (q) => q.orm.select().from(smithersNodes).where(eq(smithersNodes.runId, runId)).all());
}

/** What a resume keeps of each node of the run. */
export type NodeResumeRow = Pick<NodeRow, "nodeId" | "iteration" | "state" | "lastAttempt" | "wakeAtMs" | "errorJson">;

const NODES_TO_RESUME = `SELECT ${N.nodeId} AS "nodeId", ${N.iteration} AS iteration, ${N.state} AS state, ${N.lastAttempt} AS "lastAttempt",
  ${N.wakeAtMs} AS "wakeAtMs", ${N.errorJson} AS "errorJson" FROM ${N.$table} WHERE ${N.runId} = ?`;

/**
 * listNodes' rows with only what a resume keeps, read as plain rows: a run of 10,000 tasks read
 * whole through Drizzle (every column, an array and an object per row) was most of a resume's peak memory.
 */
export function nodesToResume(db: SmithersDb, runId: string): Promise<NodeResumeRow[]> {
  return db.read("nodesToResume", (q) => q.all<NodeResumeRow>(NODES_TO_RESUME, runId));
}

/** Moves every node of the run in one of `from` states to `to`. Returns the rows changed. */
export async function resetNodes(q: Sql, runId: string, from: string[], to: string, nowMs: number): Promise<number> {
  return changedRows(
    await q.orm
      .update(smithersNodes)
      .set({ state: to, updatedAtMs: nowMs, errorJson: null })
      .where(and(eq(smithersNodes.runId, runId), inArray(smithersNodes.state, from)))
      .run(),
  );
}

/** A run's nodes in one state (inside the caller's transaction), by the primary key's run prefix. */
export function readNodesInState(q: Sql, runId: string, state: string): Promise<NodeRow[]> {
  return q.orm
    .select()
    .from(smithersNodes)
    .where(and(eq(smithersNodes.runId, runId), eq(smithersNodes.state, state)))
    .all();
}

/**
 * Inside the transaction that continues run `fromRunId` as `toRunId` (`<Loop continueAsNewEvery>`):
 * copies each node's latest iteration that is over (finished, skipped or failed), so the new run
 * does not run again what the old one finished. Attempts stay with the old run, as its history.
 * Returns the rows copied.
 */
export function copyLatestEndedNodes(q: Sql, fromRunId: string, toRunId: string, nowMs: number): Promise<number> {
  const copied = [N.nodeId, N.iteration, N.state, N.lastAttempt, N.outputTable, N.label];
  const text = `INSERT INTO ${N.$table} (${N.runId}, ${N.updatedAtMs}, ${copied.join(", ")})
    SELECT ?, ?, ${copied.map((c) => `s.${c}`).join(", ")} FROM ${N.$table} AS s
    WHERE s.${N.runId} = ? AND s.${N.state} IN ('finished', 'skipped', 'failed')
      AND s.${N.iteration} = (SELECT MAX(m.${N.iteration}) FROM ${N.$table} AS m WHERE m.${N.runId} = s.${N.runId} AND m.${N.nodeId} = s.${N.nodeId})`;
  return q.run(text, toRunId, nowMs, fromRunId);
}

/** For each of `runIds`: how many nodes it has and how many of them ended (finished, skipped, failed, cancelled). */
export function countNodeProgress(db: SmithersDb, runIds: readonly string[]): Promise<Map<string, { done: number; failed: number; total: number }>> {
  return db.read("countNodeProgress", async (q) => {
    const counts = new Map<string, { done: number; failed: number; total: number }>();
    if (runIds.length === 0) return counts;
    const rows = await q.orm
      .select({
        runId: smithersNodes.runId,
        total: count(),
        done: sql<number>`sum(case when ${smithersNodes.state} in ('finished', 'skipped') then 1 else 0 end)`,
        failed: sql<number>`sum(case when ${smithersNodes.state} in ('failed', 'cancelled') then 1 else 0 end)`,
      })
      .from(smithersNodes)
      .where(inArray(smithersNodes.runId, [...runIds]))
      .groupBy(smithersNodes.runId)
      .all();
    for (const r of rows) counts.set(r.runId, { done: Number(r.done ?? 0), failed: Number(r.failed ?? 0), total: r.total });
    return counts;
  });
}
