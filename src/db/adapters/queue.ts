/**
 * `_smithers_queue`: the durable queue of runs handed to workers. Admission (the capacity check,
 * the duplicate check and the insert, or the refusal event) is one BEGIN IMMEDIATE, so
 * concurrent requests never overfill it and an acknowledged request is always on disk. Workers
 * claim requests with a lease; the transaction that creates or resumes a request's run removes
 * it (handOff), and from there the run's owner and heartbeat stand for the claim.
 */
import { and, asc, count, eq, inArray, isNull, type InferSelectModel } from "drizzle-orm";
import { smithersQueue, smithersRuns } from "../internal-schema.ts";
import type { SmithersDb } from "../store.ts";
import { insertEventsIn, type NewEvent } from "./events.ts";
import { insertRunRow } from "./runs.ts";
import { changedRows, immediate, lockRunSequence, notifyWorkers, sqlNames } from "./shared.ts";
import type { Sql } from "../sql.ts";

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
  row: Omit<QueueRow, "startedAtMs" | "claimedBy" | "leaseExpiresAtMs" | "returnCount">,
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
      .values({ ...row, startedAtMs: null, claimedBy: null, leaseExpiresAtMs: null, returnCount: null })
      .run();
    await notifyWorkers(q);
    return { accepted: true };
  });
}

const Q = sqlNames(smithersQueue);
/**
 * A request no worker holds (never claimed, its claim's lease ran out, or claimed by a version
 * before leases), or one the claiming worker holds itself: it is not executing it (those are in
 * `skip`), so an earlier try failed on the database, and the claim is taken up again at once
 * instead of sitting idle until its lease runs out.
 */
const CLAIMABLE = `(${Q.startedAtMs} IS NULL OR ${Q.leaseExpiresAtMs} IS NULL OR ${Q.leaseExpiresAtMs} < ? OR ${Q.claimedBy} = ?)`;
const CLAIM_ORDER = `ORDER BY ${Q.enqueuedAtMs}, ${Q.runId} LIMIT 1`;

export type Claim = {
  workerId: string;
  nowMs: number;
  leaseMs: number;
  /** Only requests for these workflows (queue names); all when undefined. */
  workflows?: readonly string[];
  /** Requests this worker passes over: those it is executing, and those whose workflow it could not load a moment ago. */
  skip?: readonly string[];
};

/**
 * Claims the oldest request no worker holds, with a lease until `nowMs + leaseMs`, and returns it
 * (undefined when none is there). On PostgreSQL the row is locked and rows other workers are
 * claiming are skipped (FOR UPDATE SKIP LOCKED), so concurrent claims never block each other or
 * take the same request; on SQLite the write lock serialises them.
 */
export function claimNext(db: SmithersDb, c: Claim): Promise<QueueRow | undefined> {
  return immediate(db, "claimQueuedRun", async (q) => {
    const params: unknown[] = [c.nowMs, c.workerId];
    let where = CLAIMABLE;
    if (c.workflows !== undefined) {
      if (c.workflows.length === 0) return undefined;
      where += ` AND ${Q.workflowName} IN (${c.workflows.map(() => "?").join(", ")})`;
      params.push(...c.workflows);
    }
    if (c.skip !== undefined && c.skip.length > 0) {
      where += ` AND ${Q.runId} NOT IN (${c.skip.map(() => "?").join(", ")})`;
      params.push(...c.skip);
    }
    const lock = q.dialect === "postgres" ? " FOR UPDATE SKIP LOCKED" : "";
    const next = await q.get<{ runId: string }>(`SELECT ${Q.runId} AS "runId" FROM ${Q.$table} WHERE ${where} ${CLAIM_ORDER}${lock}`, ...params);
    if (!next) return undefined;
    return q.orm
      .update(smithersQueue)
      .set({ startedAtMs: c.nowMs, claimedBy: c.workerId, leaseExpiresAtMs: c.nowMs + c.leaseMs })
      .where(eq(smithersQueue.runId, next.runId))
      .returning()
      .get();
  });
}

/** Extends the leases of the requests `runIds` that `workerId` still holds; returns how many. */
export function renewLeases(db: SmithersDb, workerId: string, runIds: readonly string[], nowMs: number, leaseMs: number): Promise<number> {
  if (runIds.length === 0) return Promise.resolve(0);
  return db.write("renewQueueLeases", async (q) =>
    changedRows(
      await q.orm
        .update(smithersQueue)
        .set({ leaseExpiresAtMs: nowMs + leaseMs })
        .where(and(eq(smithersQueue.claimedBy, workerId), inArray(smithersQueue.runId, [...runIds])))
        .run(),
    ),
  );
}

/**
 * Gives a claim back: the request waits again, for any worker; `counted` (its workflow did not load
 * here) adds one to its return_count. True when `workerId` still held it.
 */
export function releaseClaim(db: SmithersDb, runId: string, workerId: string, o: { counted?: boolean } = {}): Promise<boolean> {
  const counted = o.counted ? `, ${Q.returnCount} = coalesce(${Q.returnCount}, 0) + 1` : "";
  return db.write(
    o.counted ? "returnQueueClaim" : "releaseQueueClaim",
    async (q) =>
      (await q.run(
        `UPDATE ${Q.$table} SET ${Q.startedAtMs} = NULL, ${Q.claimedBy} = NULL, ${Q.leaseExpiresAtMs} = NULL${counted} WHERE ${Q.runId} = ? AND ${Q.claimedBy} = ?`,
        runId,
        workerId,
      )) > 0,
  );
}

/**
 * Ends a request that cannot start anywhere (its workflow did not load on any worker that tried):
 * the request goes, and a new run is stored `failed` with `error`, so `ps` and `inspect` show why.
 * A resume request of a stored run only goes. False when `workerId` no longer held it.
 */
export function failClaimed(db: SmithersDb, row: QueueRow, workerId: string, errorJson: string, nowMs: number): Promise<boolean> {
  return immediate(db, "failQueuedRun", async (q) => {
    const removed = changedRows(
      await q.orm
        .delete(smithersQueue)
        .where(and(eq(smithersQueue.runId, row.runId), eq(smithersQueue.claimedBy, workerId)))
        .run(),
    );
    if (removed === 0) return false;
    await insertRunRow(
      q,
      {
        runId: row.runId,
        workflowName: row.workflowName,
        workflowPath: row.workflowPath,
        status: "failed",
        createdAtMs: row.enqueuedAtMs,
        finishedAtMs: nowMs,
        errorJson,
      },
      { ifAbsent: true },
    );
    return true;
  });
}

/** Drops a request `workerId` claimed and will not run (its run cannot start); true when it held it. */
export function removeClaimed(db: SmithersDb, runId: string, workerId: string): Promise<boolean> {
  return db.write(
    "dequeueRun",
    async (q) =>
      changedRows(
        await q.orm
          .delete(smithersQueue)
          .where(and(eq(smithersQueue.runId, runId), eq(smithersQueue.claimedBy, workerId)))
          .run(),
      ) > 0,
  );
}

/**
 * Inside the transaction that creates or resumes a run: its request, if one is queued, is done
 * (the run's owner and heartbeat hold it from now on).
 */
export async function handOff(q: Sql, runId: string): Promise<void> {
  await q.run(`DELETE FROM ${Q.$table} WHERE ${Q.runId} = ?`, runId);
}

/**
 * The queued (not yet started) requests, oldest first: all of them, those of one workflow, one by
 * run id, or the first `limit` (`smithers ps` reads a page, not the whole queue).
 */
export function listWaiting(db: SmithersDb, o: { runId?: string; workflowName?: string; limit?: number } = {}): Promise<QueueRow[]> {
  return db.read("listQueuedRuns", (q) =>
    q.orm
      .select()
      .from(smithersQueue)
      .where(
        and(
          isNull(smithersQueue.startedAtMs),
          o.runId === undefined ? undefined : eq(smithersQueue.runId, o.runId),
          o.workflowName === undefined ? undefined : eq(smithersQueue.workflowName, o.workflowName),
        ),
      )
      .orderBy(asc(smithersQueue.enqueuedAtMs))
      .limit(o.limit ?? ALL_ROWS)
      .all(),
  );
}

/** A LIMIT that keeps every row. */
const ALL_ROWS = 2 ** 31 - 1;

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
