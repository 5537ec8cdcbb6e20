/**
 * `_smithers_queue`: the durable queue of runs accepted over HTTP. Admission (the capacity check,
 * the duplicate check and the insert, or the refusal event) is one BEGIN IMMEDIATE, so
 * concurrent requests never overfill it and an acknowledged request is always on disk.
 */
import { and, asc, count, eq, isNotNull, isNull, type InferSelectModel } from "drizzle-orm";
import { smithersQueue, smithersRuns } from "../internal-schema.ts";
import { changedRows, type SmithersDb } from "../smithers-db.ts";
import { insertEventsIn, type NewEvent } from "./events.ts";
import { immediate } from "./shared.ts";

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
  return immediate(db, "enqueueRun", (d): Admission => {
    const stored = d.select({ id: smithersRuns.runId }).from(smithersRuns).where(eq(smithersRuns.runId, row.runId)).get() !== undefined;
    if (d.select({ id: smithersQueue.runId }).from(smithersQueue).where(eq(smithersQueue.runId, row.runId)).get()) return { accepted: false, reason: "exists" };
    if (stored !== o.resume) return { accepted: false, reason: stored ? "exists" : "missing" };
    const waiting = d.select({ n: count() }).from(smithersQueue).where(isNull(smithersQueue.startedAtMs)).get()?.n ?? 0;
    if (waiting >= capacity) {
      insertEventsIn(d, [refusal(waiting)]);
      return { accepted: false, reason: "full", waiting };
    }
    d.insert(smithersQueue)
      .values({ ...row, startedAtMs: null })
      .run();
    return { accepted: true };
  });
}

/** Marks the oldest waiting request started and returns it (undefined when none waits). */
export function claimNext(db: SmithersDb, nowMs: number): Promise<QueueRow | undefined> {
  return immediate(db, "claimQueuedRun", (d) => {
    const next = d
      .select()
      .from(smithersQueue)
      .where(isNull(smithersQueue.startedAtMs))
      .orderBy(asc(smithersQueue.enqueuedAtMs), asc(smithersQueue.runId))
      .limit(1)
      .get();
    if (!next) return undefined;
    d.update(smithersQueue).set({ startedAtMs: nowMs }).where(eq(smithersQueue.runId, next.runId)).run();
    return { ...next, startedAtMs: nowMs };
  });
}

/**
 * Puts requests marked started back in line: called when a server starts, so the runs a
 * crashed server was executing run again (resumed when their run row exists).
 */
export function requeueStarted(db: SmithersDb): Promise<number> {
  return immediate(db, "requeueStarted", (d) =>
    changedRows(d.update(smithersQueue).set({ startedAtMs: null }).where(isNotNull(smithersQueue.startedAtMs)).run()),
  );
}

/** Removes a request whose run ended (or stopped to wait). */
export function remove(db: SmithersDb, runId: string): Promise<void> {
  return db.write("dequeueRun", (d) => {
    d.delete(smithersQueue).where(eq(smithersQueue.runId, runId)).run();
  });
}

/** The queued (not yet started) requests, oldest first, or one of them by run id. */
export function listWaiting(db: SmithersDb, runId?: string): Promise<QueueRow[]> {
  return db.read("listQueuedRuns", (d) =>
    d
      .select()
      .from(smithersQueue)
      .where(and(isNull(smithersQueue.startedAtMs), runId === undefined ? undefined : eq(smithersQueue.runId, runId)))
      .orderBy(asc(smithersQueue.enqueuedAtMs))
      .all(),
  );
}

/** How many requests wait to start. */
export function countWaiting(db: SmithersDb): Promise<number> {
  return db.read("countQueuedRuns", (d) => d.select({ n: count() }).from(smithersQueue).where(isNull(smithersQueue.startedAtMs)).get()?.n ?? 0);
}

/** The request for a run, waiting or started (undefined when none is queued). */
export function getRequest(db: SmithersDb, runId: string): Promise<QueueRow | undefined> {
  return db.read("getQueuedRun", (d) => d.select().from(smithersQueue).where(eq(smithersQueue.runId, runId)).get());
}

/** Drops a request that has not started; true when there was one. */
export function removeWaiting(db: SmithersDb, runId: string): Promise<boolean> {
  return db.write(
    "dropQueuedRun",
    (d) =>
      changedRows(
        d
          .delete(smithersQueue)
          .where(and(eq(smithersQueue.runId, runId), isNull(smithersQueue.startedAtMs)))
          .run(),
      ) > 0,
  );
}
