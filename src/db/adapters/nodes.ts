/** `_smithers_nodes`: the current state of each task node (run, node, iteration). */
import { and, eq, inArray, type InferInsertModel, type InferSelectModel } from "drizzle-orm";
import { smithersNodes } from "../internal-schema.ts";
import { changedRows, type Drizzle, type SmithersDb } from "../smithers-db.ts";

export type NodeRow = InferSelectModel<typeof smithersNodes>;
export type NodeUpsert = InferInsertModel<typeof smithersNodes>;

/** Insert or update one node row. Drizzle-level so it can join a caller's transaction. */
export function upsertNode(d: Drizzle, row: NodeUpsert): void {
  const { runId, nodeId, iteration, ...rest } = row;
  d.insert(smithersNodes)
    .values(row)
    .onConflictDoUpdate({ target: [smithersNodes.runId, smithersNodes.nodeId, smithersNodes.iteration], set: rest })
    .run();
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
