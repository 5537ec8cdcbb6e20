/**
 * `_smithers_cron`: schedule definitions. The scheduler reads `next_run_at_ms` instead of
 * re-evaluating every pattern on each poll, and a failed fire leaves its error on the row.
 */
import type { InferInsertModel, InferSelectModel } from "drizzle-orm";
import { and, asc, eq, lte, sql } from "drizzle-orm/sql";
import { smithersCron } from "../internal-schema.ts";
import type { SmithersDb } from "../store.ts";
import { unlockedRow } from "./shared.ts";

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
  return db.write("upsertCron", async (q) => {
    const insert = q.orm.insert(smithersCron).values(row);
    if (Object.keys(set).length === 0) await insert.onConflictDoNothing().run();
    else await insert.onConflictDoUpdate({ target: smithersCron.cronId, set }).run();
  });
}

export function getCron(db: SmithersDb, cronId: string): Promise<CronRow | undefined> {
  return db.read("getCron", (q) => q.orm.select().from(smithersCron).where(eq(smithersCron.cronId, cronId)).get());
}

/** All schedules by id, or only the enabled ones. */
export function listCrons(db: SmithersDb, enabledOnly = false): Promise<CronRow[]> {
  return db.read("listCrons", async (q) => {
    const query = q.orm.select().from(smithersCron);
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
    async (q) =>
      (
        await q.orm
          .update(smithersCron)
          .set({ lastRunAtMs, nextRunAtMs, errorJson: errorJson ?? null })
          .where(eq(smithersCron.cronId, cronId))
          .returning({ cronId: smithersCron.cronId })
          .all()
      ).length > 0,
  );
}

/** Removes the schedule; returns whether it existed. */
export function deleteCron(db: SmithersDb, cronId: string): Promise<boolean> {
  return db.write(
    "deleteCron",
    async (q) => (await q.orm.delete(smithersCron).where(eq(smithersCron.cronId, cronId)).returning({ cronId: smithersCron.cronId }).all()).length > 0,
  );
}

/** Creates the schedule; returns false (nothing written) when `cronId` is taken. */
export function insertCron(db: SmithersDb, row: NewCronRow): Promise<boolean> {
  return db.write(
    "insertCron",
    async (q) => (await q.orm.insert(smithersCron).values(row).onConflictDoNothing().returning({ cronId: smithersCron.cronId }).all()).length > 0,
  );
}

/** Enabled schedules whose next fire time is at or before `nowMs`, soonest first (through the due index). */
export function listDueCrons(db: SmithersDb, nowMs: number, limit: number): Promise<CronRow[]> {
  return db.read("listDueCrons", (q) =>
    q.orm
      .select()
      .from(smithersCron)
      .where(and(eq(smithersCron.enabled, true), lte(smithersCron.nextRunAtMs, nowMs)))
      .orderBy(asc(smithersCron.nextRunAtMs))
      .limit(limit)
      .all(),
  );
}

export type CronSlotClaim = {
  cronId: string;
  /** The next_run_at_ms the claimer read: the compare of the compare-and-swap. */
  expectedNextRunAtMs: number;
  slotMs: number;
  runId: string;
  nextRunAtMs: number | null;
  skipped: number;
};

/**
 * Claims a due slot by compare-and-swap on next_run_at_ms: of several schedulers that read the
 * same row exactly one moves it on. Records the slot, its run id and the skipped slots, and
 * clears the previous error. Returns whether this caller won (false at once for a row another
 * transaction holds locked).
 */
export function claimCronSlot(db: SmithersDb, c: CronSlotClaim): Promise<boolean> {
  return db.write(
    "claimCronSlot",
    async (q) =>
      (
        await q.orm
          .update(smithersCron)
          .set({
            nextRunAtMs: c.nextRunAtMs,
            lastRunAtMs: c.slotMs,
            lastRunId: c.runId,
            skippedSlots: sql`${smithersCron.skippedSlots} + ${c.skipped}`,
            errorJson: null,
          })
          .where(
            and(unlockedRow(q.dialect, smithersCron.cronId, c.cronId), eq(smithersCron.enabled, true), eq(smithersCron.nextRunAtMs, c.expectedNextRunAtMs)),
          )
          .returning({ cronId: smithersCron.cronId })
          .all()
      ).length > 0,
  );
}

/** Stores the error of a fire that could not start its run. */
export function setCronError(db: SmithersDb, cronId: string, errorJson: string): Promise<void> {
  return db.write("setCronError", async (q) => {
    await q.orm.update(smithersCron).set({ errorJson }).where(eq(smithersCron.cronId, cronId)).run();
  });
}
