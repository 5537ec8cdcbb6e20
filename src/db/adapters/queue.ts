/**
 * `_smithers_queue`: the durable queue of runs accepted over HTTP. Admission (the capacity check,
 * the duplicate check and the insert, or the refusal event) is one BEGIN IMMEDIATE, so
 * concurrent requests never overfill it and an acknowledged request is always on disk.
 */
import { and, asc, count, eq, isNotNull, isNull, type InferSelectModel } from "drizzle-orm";
import { smithersQueue, smithersRuns } from "../internal-schema.ts";
import { perDialect } from "../sql.ts";
import type { SmithersDb } from "../store.ts";
import { insertEventsIn, type NewEvent } from "./events.ts";
import { changedRows, immediate, lockRunSequence, sqlNames } from "./shared.ts";

export type QueueRow = InferSelectModel<typeof smithersQueue>;

export type Admission =
  | { accepted: true }
  | { accepted: false; reason: "full"; waiting: number }
  | { accepted: false; reason: "exists" }
  | { accepted: false; reason: "missing" };

/**
 * Adds a run to the queue unless as many runs as `capacity` wait to start (then `refusal(waiting)`
 * is journalled instead). A new run's id must be unused (no run, no request); a `resume` names a
 * stored run with no request queued.
 */
export function enqueue(
  db: SmithersDb,
  row: Omit<QueueRow, "startedAtMs">,
  o: { capacity: number; resume: boolean },
  refusal: (waiting: number) => NewEvent,
): Promise<Admission> {
  const { capacity } = o;
  return immediate(db, "enqueueRun", async (q): Promise<Admission> => {
    // One admission at a time (PostgreSQL; SQLite's write lock already is that), so the count holds until the insert.
    await lockRunSequence(q, "queue", "");
    const stored = (await q.orm.select({ id: smithersRuns.runId }).from(smithersRuns).where(eq(smithersRuns.runId, row.runId)).get()) !== undefined;
    if (await q.orm.select({ id: smithersQueue.runId }).from(smithersQueue).where(eq(smithersQueue.runId, row.runId)).get())
      return { accepted: false, reason: "exists" };
    if (stored !== o.resume) return { accepted: false, reason: stored ? "exists" : "missing" };
    const waiting = (await q.orm.select({ n: count() }).from(smithersQueue).where(isNull(smithersQueue.startedAtMs)).get())?.n ?? 0;
    if (waiting >= capacity) {
      await insertEventsIn(q, [refusal(waiting)]);
      return { accepted: false, reason: "full", waiting };
    }
    await q.orm
      .insert(smithersQueue)
      .values({ ...row, startedAtMs: null })
      .run();
    return { accepted: true };
  });
}

const Q = sqlNames(smithersQueue);
/** The oldest waiting request; on PostgreSQL locked, skipping requests another server is claiming. */
const CLAIM_NEXT = perDialect(
  (dialect) =>
    `SELECT ${Q.runId} AS "runId" FROM ${Q.$table} WHERE ${Q.startedAtMs} IS NULL ORDER BY ${Q.enqueuedAtMs}, ${Q.runId} LIMIT 1${dialect === "postgres" ? " FOR UPDATE SKIP LOCKED" : ""}`,
);

/** Marks the oldest waiting request started and returns it (undefined when none waits). */
export function claimNext(db: SmithersDb, nowMs: number): Promise<QueueRow | undefined> {
  return immediate(db, "claimQueuedRun", async (q) => {
    const next = await q.get<{ runId: string }>(CLAIM_NEXT[q.dialect]);
    if (!next) return undefined;
    await q.orm.update(smithersQueue).set({ startedAtMs: nowMs }).where(eq(smithersQueue.runId, next.runId)).run();
    const row = await q.orm.select().from(smithersQueue).where(eq(smithersQueue.runId, next.runId)).get();
    return row;
  });
}

/**
 * Puts requests marked started back in line: called when a server starts, so the runs a
 * crashed server was executing run again (resumed when their run row exists).
 */
export function requeueStarted(db: SmithersDb): Promise<number> {
  return immediate(db, "requeueStarted", async (q) =>
    changedRows(await q.orm.update(smithersQueue).set({ startedAtMs: null }).where(isNotNull(smithersQueue.startedAtMs)).run()),
  );
}

/** Removes a request whose run ended (or stopped to wait). */
export function remove(db: SmithersDb, runId: string): Promise<void> {
  return db.write("dequeueRun", async (q) => {
    await q.orm.delete(smithersQueue).where(eq(smithersQueue.runId, runId)).run();
  });
}

/** The queued (not yet started) requests, oldest first, or one of them by run id. */
export function listWaiting(db: SmithersDb, runId?: string): Promise<QueueRow[]> {
  return db.read("listQueuedRuns", (q) =>
    q.orm
      .select()
      .from(smithersQueue)
      .where(and(isNull(smithersQueue.startedAtMs), runId === undefined ? undefined : eq(smithersQueue.runId, runId)))
      .orderBy(asc(smithersQueue.enqueuedAtMs))
      .all(),
  );
}

/** How many requests wait to start. */
export function countWaiting(db: SmithersDb): Promise<number> {
  return db.read(
    "countQueuedRuns",
    async (q) => (await q.orm.select({ n: count() }).from(smithersQueue).where(isNull(smithersQueue.startedAtMs)).get())?.n ?? 0,
  );
}

/** The request for a run, waiting or started (undefined when none is queued). */
export function getRequest(db: SmithersDb, runId: string): Promise<QueueRow | undefined> {
  return db.read("getQueuedRun", (q) => q.orm.select().from(smithersQueue).where(eq(smithersQueue.runId, runId)).get());
}

/** Drops a request that has not started; true when there was one. */
export function removeWaiting(db: SmithersDb, runId: string): Promise<boolean> {
  return db.write(
    "dropQueuedRun",
    async (q) =>
      changedRows(
        await q.orm
          .delete(smithersQueue)
          .where(and(eq(smithersQueue.runId, runId), isNull(smithersQueue.startedAtMs)))
          .run(),
      ) > 0,
  );
}
