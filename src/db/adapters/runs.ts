/** `_smithers_runs`: one row per run; status, ownership and heartbeat. */
import { eq, type InferInsertModel, type InferSelectModel } from "drizzle-orm";
import { smithersRuns } from "../internal-schema.ts";
import type { SmithersDb } from "../smithers-db.ts";

export type RunRow = InferSelectModel<typeof smithersRuns>;
export type NewRunRow = InferInsertModel<typeof smithersRuns>;

export function insertRun(db: SmithersDb, row: NewRunRow): Promise<void> {
  return db.write("insertRun", (d) => {
    d.insert(smithersRuns).values(row).run();
  });
}

export function getRun(db: SmithersDb, runId: string): Promise<RunRow | undefined> {
  return db.read("getRun", (d) => d.select().from(smithersRuns).where(eq(smithersRuns.runId, runId)).get());
}

export function updateRun(db: SmithersDb, runId: string, patch: Partial<Omit<NewRunRow, "runId">>): Promise<void> {
  return db.write("updateRun", (d) => {
    d.update(smithersRuns).set(patch).where(eq(smithersRuns.runId, runId)).run();
  });
}

export function heartbeatRun(db: SmithersDb, runId: string, ownerId: string, nowMs: number): Promise<void> {
  return db.write("heartbeatRun", (d) => {
    d.update(smithersRuns)
      .set({ heartbeatAtMs: nowMs, runtimeOwnerId: ownerId })
      .where(eq(smithersRuns.runId, runId))
      .run();
  });
}
