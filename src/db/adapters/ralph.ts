/** `_smithers_ralph`: per-loop iteration counter and completion flag. */
import type { InferSelectModel } from "drizzle-orm";
import { eq } from "drizzle-orm/sql";
import { smithersRalph } from "../internal-schema.ts";
import { combinable, insertSql, sqlNames } from "./shared.ts";
import type { Sql } from "../sql.ts";
import type { SmithersDb } from "../store.ts";

export type RalphRow = InferSelectModel<typeof smithersRalph>;

const R = sqlNames(smithersRalph);

// A statement text built once (the query builder rebuilt and re-prepared it on every loop step).
const UPSERT_LOOP = combinable(`${insertSql(smithersRalph, ["runId", "ralphId", "iteration", "done", "updatedAtMs"])}
  ON CONFLICT (${R.runId}, ${R.ralphId}) DO UPDATE SET ${R.iteration} = excluded.${R.iteration}, ${R.done} = excluded.${R.done},
    ${R.updatedAtMs} = excluded.${R.updatedAtMs}`);

export async function setLoopState(q: Sql, row: { runId: string; ralphId: string; iteration: number; done: boolean; updatedAtMs: number }): Promise<void> {
  await q.run(UPSERT_LOOP, row.runId, row.ralphId, row.iteration, row.done, row.updatedAtMs);
}

export function listLoopStates(db: SmithersDb, runId: string): Promise<RalphRow[]> {
  return db.read("listLoopStates", (q) => q.orm.select().from(smithersRalph).where(eq(smithersRalph.runId, runId)).all());
}
