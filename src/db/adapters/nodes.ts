/** `_smithers_nodes`: the current state of each task node (run, node, iteration). */
import { and, eq, inArray, sql, type InferInsertModel, type InferSelectModel } from "drizzle-orm";
import { cachedStatement } from "./shared.ts";
import { smithersNodes } from "../internal-schema.ts";
import { changedRows, type Drizzle, type SmithersDb } from "../smithers-db.ts";

export type NodeRow = InferSelectModel<typeof smithersNodes>;
export type NodeUpsert = InferInsertModel<typeof smithersNodes>;

const p = (name: string) => sql.placeholder(name);

/**
 * Insert or update one node row (a missing lastAttempt keeps the stored one). Drizzle-level so
 * it can join a caller's transaction.
 */
export function upsertNode(d: Drizzle, row: NodeUpsert): void {
  const statement = cachedStatement(d, "upsertNode", () =>
    d
      .insert(smithersNodes)
      .values({
        runId: p("runId"),
        nodeId: p("nodeId"),
        iteration: p("iteration"),
        state: p("state"),
        lastAttempt: p("lastAttempt"),
        updatedAtMs: p("updatedAtMs"),
        outputTable: p("outputTable"),
        label: p("label"),
      })
      .onConflictDoUpdate({
        target: [smithersNodes.runId, smithersNodes.nodeId, smithersNodes.iteration],
        set: {
          state: sql`excluded.state`,
          lastAttempt: sql`coalesce(excluded.last_attempt, ${smithersNodes.lastAttempt})`,
          updatedAtMs: sql`excluded.updated_at_ms`,
          outputTable: sql`excluded.output_table`,
          label: sql`excluded.label`,
        },
      })
      .prepare(),
  );
  statement.run({ ...row, iteration: row.iteration ?? 0, lastAttempt: row.lastAttempt ?? null, label: row.label ?? null });
}

export function listNodes(db: SmithersDb, runId: string): Promise<NodeRow[]> {
  return db.read("listNodes", (d) => d.select().from(smithersNodes).where(eq(smithersNodes.runId, runId)).all());
}

/** Moves every node of the run in one of `from` states to `to`. Returns the rows changed. */
export function resetNodes(d: Drizzle, runId: string, from: string[], to: string, nowMs: number): number {
  return changedRows(
    d
    .update(smithersNodes)
    .set({ state: to, updatedAtMs: nowMs })
    .where(and(eq(smithersNodes.runId, runId), inArray(smithersNodes.state, from)))
    .run(),
  );
}
