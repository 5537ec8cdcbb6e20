/** `_smithers_ralph`: per-loop iteration counter and completion flag. */
import { eq, type InferSelectModel } from "drizzle-orm";
import { smithersRalph } from "../internal-schema.ts";
import type { Drizzle, SmithersDb } from "../smithers-db.ts";

export type RalphRow = InferSelectModel<typeof smithersRalph>;

export function setLoopState(d: Drizzle, row: { runId: string; ralphId: string; iteration: number; done: boolean; updatedAtMs: number }): void {
  const { runId, ralphId, ...rest } = row;
  d.insert(smithersRalph)
    .values(row)
    .onConflictDoUpdate({ target: [smithersRalph.runId, smithersRalph.ralphId], set: rest })
    .run();
}

export function listLoopStates(db: SmithersDb, runId: string): Promise<RalphRow[]> {
  return db.read("listLoopStates", (d) => d.select().from(smithersRalph).where(eq(smithersRalph.runId, runId)).all());
}
