/**
 * `_smithers_cron`: schedule definitions. The scheduler reads `next_run_at_ms` instead of
 * re-evaluating every pattern on each poll, and a failed fire leaves its error on the row.
 */
import { asc, eq, type InferInsertModel, type InferSelectModel } from "drizzle-orm";
import { smithersCron } from "../internal-schema.ts";
import type { SmithersDb } from "../smithers-db.ts";

export type CronRow = InferSelectModel<typeof smithersCron>;
export type NewCronRow = InferInsertModel<typeof smithersCron>;

/**
 * Inserts the schedule, or updates it by `cronId`. On update every field given replaces the
 * stored one; `createdAtMs` keeps its first value.
 * @example
 * await upsertCron(db, { cronId: "nightly", pattern: "0 3 * * *", workflowPath: "wf.tsx", createdAtMs: Date.now() });
 */
export function upsertCron(db: SmithersDb, row: NewCronRow): Promise<void> {
  const { cronId: _id, createdAtMs: _created, ...rest } = row;
  const set = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined));
  return db.write("upsertCron", (d) => {
    const insert = d.insert(smithersCron).values(row);
    if (Object.keys(set).length === 0) insert.onConflictDoNothing().run();
    else insert.onConflictDoUpdate({ target: smithersCron.cronId, set }).run();
  });
}

export function getCron(db: SmithersDb, cronId: string): Promise<CronRow | undefined> {
  return db.read("getCron", (d) => d.select().from(smithersCron).where(eq(smithersCron.cronId, cronId)).get());
}

/** All schedules by id, or only the enabled ones. */
export function listCrons(db: SmithersDb, enabledOnly = false): Promise<CronRow[]> {
  return db.read("listCrons", (d) => {
    const query = d.select().from(smithersCron);
    const filtered = enabledOnly ? query.where(eq(smithersCron.enabled, true)) : query;
    return filtered.orderBy(asc(smithersCron.cronId)).all();
  });
}

/**
 * Records a fire: when it ran, when it fires next, and its error (`null`/omitted for a
 * success, which clears the error of an earlier failed fire). Returns whether the cron exists.
 */
export function updateCronRunTime(
  db: SmithersDb,
  cronId: string,
  lastRunAtMs: number,
  nextRunAtMs: number | null,
  errorJson?: string | null,
): Promise<boolean> {
  return db.write(
    "updateCronRunTime",
    (d) =>
      d
        .update(smithersCron)
        .set({ lastRunAtMs, nextRunAtMs, errorJson: errorJson ?? null })
        .where(eq(smithersCron.cronId, cronId))
        .returning({ cronId: smithersCron.cronId })
        .all().length > 0,
  );
}

/** Removes the schedule; returns whether it existed. */
export function deleteCron(db: SmithersDb, cronId: string): Promise<boolean> {
  return db.write(
    "deleteCron",
    (d) => d.delete(smithersCron).where(eq(smithersCron.cronId, cronId)).returning({ cronId: smithersCron.cronId }).all().length > 0,
  );
}
