/**
 * `_smithers_queue`: the durable queue of runs handed to workers. Admission (the capacity check,
 * the duplicate check and the insert, or the refusal event) is one BEGIN IMMEDIATE, so
 * concurrent requests never overfill it and an acknowledged request is always on disk. Workers
 * claim requests with a lease; the transaction that creates or resumes a request's run removes
 * it (handOff), and from there the run's owner and heartbeat stand for the claim.
 */
import type { InferSelectModel } from "drizzle-orm";
import { and, asc, count, eq, inArray, isNull } from "drizzle-orm/sql";
import { smithersIdempotency, smithersQueue, smithersRuns } from "../internal-schema.ts";
import type { SmithersDb } from "../store.ts";
import { insertEventsIn, type NewEvent } from "./events.ts";
import { CLOCK_MS, insertRunRow } from "./runs.ts";
import { changedRows, immediate, lockRunSequence, notifyWorkers, sqlNames } from "./shared.ts";
import type { Sql } from "../sql.ts";

export type QueueRow = InferSelectModel<typeof smithersQueue>;

export type Admission =
  | { accepted: true; runId: string; debounced: boolean }
  | { accepted: false; reason: "full"; waiting: number }
  | { accepted: false; reason: "exists" }
  | { accepted: false; reason: "missing" }
  /** The idempotency key started `runId` already, with the same request (`conflict`: with another one). */
  | { accepted: false; reason: "replayed" | "conflict"; runId: string };

/** What a queued start asks for beyond its row (all optional; a start with none of them pays for none). */
export type AdmissionOptions = {
  capacity: number;
  resume: boolean;
  /** Collapse into the waiting request with this key (same workflow): it takes this input and waits `ms` more. */
  debounce?: { key: string; ms: number };
  /** The first start with this key is kept for `windowMs`; a repeat returns its run (`requestHash` tells a different request). */
  idempotency?: { key: string; requestHash: string; windowMs: number };
};

/** The new row's fields; priority and tenant default to 0 and none. */
export type NewRequest = Omit<
  QueueRow,
  "startedAtMs" | "claimedBy" | "leaseExpiresAtMs" | "returnCount" | "priority" | "tenant" | "notBeforeMs" | "debounceKey" | "traceParent"
> &
  Partial<Pick<QueueRow, "priority" | "tenant" | "traceParent">>;

/**
 * Adds a run to the queue unless as many runs as `capacity` wait to start (then `refusal(waiting)`
 * is journalled instead). A new run's id must be unused (no run, no request); a `resume` names a
 * stored run with no request queued. With `idempotency`, a live record of the key answers instead
 * (`replayed` or `conflict`), else the key is recorded with the run it admits; with `debounce`, a
 * waiting request of the same workflow and key is updated instead of adding one. One transaction,
 * serialised with every other admission, so concurrent repeats of a key admit one run.
 */
export function enqueue(db: SmithersDb, row: NewRequest, o: AdmissionOptions, refusal: (waiting: number) => NewEvent): Promise<Admission> {
  const { capacity } = o;
  return immediate(db, "enqueueRun", async (q): Promise<Admission> => {
    // One admission at a time (PostgreSQL; SQLite's write lock already is that), so the count holds until the insert.
    await lockRunSequence(q, "queue", "");
    const timed = o.idempotency !== undefined || o.debounce !== undefined;
    const nowMs = timed ? await clockIn(q) : 0;
    if (o.idempotency) {
      const earlier = await liveKey(q, o.idempotency.key, nowMs);
      if (earlier) return { accepted: false, reason: earlier.requestHash === o.idempotency.requestHash ? "replayed" : "conflict", runId: earlier.runId };
    }
    const remember = async (runId: string) => {
      if (o.idempotency) await recordKey(q, { ...o.idempotency, runId, nowMs });
    };
    if (o.debounce) {
      const waiting = await q.get<{ runId: string }>(
        `SELECT ${Q.runId} AS "runId" FROM ${Q.$table} WHERE ${Q.debounceKey} = ? AND ${Q.workflowName} = ? AND ${Q.startedAtMs} IS NULL ORDER BY ${Q.enqueuedAtMs} LIMIT 1`,
        o.debounce.key,
        row.workflowName,
      );
      // Still unclaimed when updated: on PostgreSQL a worker may have claimed it since the read (the
      // update then waits for its lock and finds it claimed), and this start then queues a new run.
      const merged =
        waiting !== undefined &&
        changedRows(
          await q.orm
            .update(smithersQueue)
            .set({ inputJson: row.inputJson, notBeforeMs: nowMs + o.debounce.ms, priority: row.priority ?? 0, tenant: row.tenant ?? "" })
            .where(and(eq(smithersQueue.runId, waiting.runId), isNull(smithersQueue.startedAtMs)))
            .run(),
        ) > 0;
      if (merged) {
        await remember(waiting.runId);
        await notifyWorkers(q);
        return { accepted: true, runId: waiting.runId, debounced: true };
      }
    }
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
      .values({
        ...row,
        startedAtMs: null,
        claimedBy: null,
        leaseExpiresAtMs: null,
        returnCount: null,
        notBeforeMs: o.debounce ? nowMs + o.debounce.ms : null,
        debounceKey: o.debounce?.key ?? null,
      })
      .run();
    await remember(row.runId);
    await notifyWorkers(q);
    return { accepted: true, runId: row.runId, debounced: false };
  });
}

/** The database's clock inside a transaction (not-before times and key expiry are judged by it, like leases). */
async function clockIn(q: Sql): Promise<number> {
  return Number((await q.get<{ now: number | string }>(`SELECT ${CLOCK_MS[q.dialect]} AS now`))?.now);
}

/** The unexpired record of an idempotency key; expired records go first (each is deleted once, by the index on expiry). */
async function liveKey(q: Sql, key: string, nowMs: number): Promise<{ runId: string; requestHash: string } | undefined> {
  await q.run(`DELETE FROM ${K.$table} WHERE ${K.expiresAtMs} <= ?`, nowMs);
  return q.get<{ runId: string; requestHash: string }>(
    `SELECT ${K.runId} AS "runId", ${K.requestHash} AS "requestHash" FROM ${K.$table} WHERE ${K.key} = ?`,
    key,
  );
}

async function recordKey(q: Sql, r: { key: string; requestHash: string; windowMs: number; runId: string; nowMs: number }): Promise<void> {
  await q.orm
    .insert(smithersIdempotency)
    .values({ key: r.key, runId: r.runId, requestHash: r.requestHash, createdAtMs: r.nowMs, expiresAtMs: r.nowMs + r.windowMs })
    .run();
}

const Q = sqlNames(smithersQueue);
const K = sqlNames(smithersIdempotency);

export { claimNext, nextNotBefore, type Claim } from "./queue-claim.ts";

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
