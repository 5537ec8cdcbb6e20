/** `_smithers_ralph`: per-loop iteration counter and completion flag. */
import { eq, type InferSelectModel } from "drizzle-orm";
import { smithersRalph } from "../internal-schema.ts";
import type { Sql } from "../sql.ts";
import type { SmithersDb } from "../store.ts";

export type RalphRow = InferSelectModel<typeof smithersRalph>;

export async function setLoopState(q: Sql, row: { runId: string; ralphId: string; iteration: number; done: boolean; updatedAtMs: number }): Promise<void> {
  const { runId, ralphId, ...rest } = row;
  await q.orm
    .insert(smithersRalph)
    .values(row)
    .onConflictDoUpdate({ target: [smithersRalph.runId, smithersRalph.ralphId], set: rest })
    .run();
}

export function listLoopStates(db: SmithersDb, runId: string): Promise<RalphRow[]> {
  return db.read("listLoopStates", (q) => q.orm.select().from(smithersRalph).where(eq(smithersRalph.runId, runId)).all());
}
