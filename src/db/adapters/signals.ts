/**
 * `_smithers_signals`: inbound messages for waiting runs. Like events, `seq` is MAX+1 under
 * the run's sequence lock (BEGIN IMMEDIATE on SQLite, an advisory lock on PostgreSQL), and a signal identical in all six fields is stored once (replays and client
 * retries return the seq it already has).
 */
import type { InferSelectModel } from "drizzle-orm";
import { and, asc, eq, gt, gte, inArray, isNull, sql, type SQL } from "drizzle-orm/sql";
import { SIGNAL_QUERY_LIMIT } from "../constants.ts";
import { smithersSignals } from "../internal-schema.ts";
import type { Sql } from "../sql.ts";
import type { SmithersDb } from "../store.ts";
import { immediate, isSame, lockRunSequence } from "./shared.ts";

export type SignalRow = InferSelectModel<typeof smithersSignals>;

export type NewSignal = {
  runId: string;
  signalName: string;
  correlationId?: string | null;
  /** Compared byte for byte when de-duplicating. */
  payloadJson: string;
  receivedAtMs: number;
  receivedBy?: string | null;
  /** An idempotency key: a signal stored earlier with this key for the run is returned instead of a new one. */
  dedupeKey?: string | null;
};

export type SignalQuery = {
  runId: string;
  signalName?: string;
  /** A string matches that key; `null` matches signals without one; omitted means any. */
  correlationId?: string | null;
  /** Only signals received at or after this time. */
  receivedAfterMs?: number;
  /** Default SIGNAL_QUERY_LIMIT (200). */
  limit?: number;
};

/** insertSignal inside the caller's transaction (sendSignal checks and stores in one). */
export async function insertSignalIn(q: Sql, signal: NewSignal): Promise<number> {
  return (await insertOrFindIn(q, signal)).seq;
}

/** insertSignalIn that also says whether the signal was already stored (same key, or identical in every field). */
export async function insertOrFindIn(q: Sql, signal: NewSignal): Promise<{ seq: number; duplicate: boolean }> {
  const row = { ...signal, correlationId: signal.correlationId ?? null, receivedBy: signal.receivedBy ?? null, dedupeKey: signal.dedupeKey ?? null };
  // Held until the commit: the duplicate checks and the MAX+1 below see every earlier sender's signal.
  await lockRunSequence(q, "signals", row.runId);
  if (row.dedupeKey !== null) {
    const keyed = await q.orm
      .select({ seq: smithersSignals.seq })
      .from(smithersSignals)
      .where(and(eq(smithersSignals.runId, row.runId), eq(smithersSignals.dedupeKey, row.dedupeKey)))
      .get();
    if (keyed) return { seq: keyed.seq, duplicate: true };
  }
  const existing = await q.orm
    .select({ seq: smithersSignals.seq })
    .from(smithersSignals)
    .where(
      and(
        eq(smithersSignals.runId, row.runId),
        eq(smithersSignals.signalName, row.signalName),
        isSame(q.dialect, smithersSignals.correlationId, row.correlationId),
        eq(smithersSignals.payloadJson, row.payloadJson),
        eq(smithersSignals.receivedAtMs, row.receivedAtMs),
        isSame(q.dialect, smithersSignals.receivedBy, row.receivedBy),
      ),
    )
    .get();
  if (existing) return { seq: existing.seq, duplicate: true };
  const next = await q.orm
    .select({ next: sql<number>`coalesce(max(${smithersSignals.seq}), -1) + 1` })
    .from(smithersSignals)
    .where(eq(smithersSignals.runId, row.runId))
    .get();
  const seq = Number(next?.next ?? 0);
  await q.orm
    .insert(smithersSignals)
    .values({ ...row, seq })
    .run();
  return { seq, duplicate: false };
}

/** The signal stored with `dedupeKey` in one of `runIds` (a retry's first send went to a child run), if any. */
export async function findByDedupeKeyIn(q: Sql, runIds: readonly string[], dedupeKey: string): Promise<{ runId: string; seq: number } | undefined> {
  if (runIds.length === 0) return undefined;
  return await q.orm
    .select({ runId: smithersSignals.runId, seq: smithersSignals.seq })
    .from(smithersSignals)
    .where(and(inArray(smithersSignals.runId, [...runIds]), eq(smithersSignals.dedupeKey, dedupeKey)))
    .orderBy(asc(smithersSignals.runId))
    .get();
}

/**
 * Stores a signal and returns its seq (the existing seq for an identical signal).
 * @example
 * const seq = await insertSignal(db, { runId, signalName: "approved", payloadJson: "{}", receivedAtMs: Date.now() });
 */
export function insertSignal(db: SmithersDb, signal: NewSignal): Promise<number> {
  return immediate(db, "insertSignal", (q) => insertSignalIn(q, signal));
}

/** A run's signals in seq (arrival) order. */
export function querySignals(db: SmithersDb, query: SignalQuery): Promise<SignalRow[]> {
  const conditions: (SQL | undefined)[] = [eq(smithersSignals.runId, query.runId)];
  if (query.signalName !== undefined) conditions.push(eq(smithersSignals.signalName, query.signalName));
  if (query.correlationId === null) conditions.push(isNull(smithersSignals.correlationId));
  else if (query.correlationId !== undefined) conditions.push(eq(smithersSignals.correlationId, query.correlationId));
  if (query.receivedAfterMs !== undefined) conditions.push(gte(smithersSignals.receivedAtMs, query.receivedAfterMs));
  return db.read("querySignals", (q) =>
    q.orm
      .select()
      .from(smithersSignals)
      .where(and(...conditions))
      .orderBy(asc(smithersSignals.seq))
      .limit(query.limit ?? SIGNAL_QUERY_LIMIT)
      .all(),
  );
}

/** A run's signals no node took or refused yet, in seq order, after `afterSeq` (what waiting nodes are offered). */
export async function readOpenSignals(q: Sql, runId: string, afterSeq = -1): Promise<SignalRow[]> {
  return await q.orm
    .select()
    .from(smithersSignals)
    .where(and(eq(smithersSignals.runId, runId), gt(smithersSignals.seq, afterSeq), isNull(smithersSignals.consumedAtMs), isNull(smithersSignals.rejectedJson)))
    .orderBy(asc(smithersSignals.seq))
    .limit(SIGNAL_QUERY_LIMIT)
    .all();
}

/** Records that a node took the signal (inside the step that stores the node's row). */
export async function consumeSignal(q: Sql, key: { runId: string; seq: number; nodeId: string; iteration: number; atMs: number }): Promise<void> {
  await q.orm
    .update(smithersSignals)
    .set({ consumedByNodeId: key.nodeId, consumedByIteration: key.iteration, consumedAtMs: key.atMs })
    .where(and(eq(smithersSignals.runId, key.runId), eq(smithersSignals.seq, key.seq)))
    .run();
}

/** Records that the node it was offered to refused the signal's payload; it is not offered again. */
export async function rejectSignal(q: Sql, key: { runId: string; seq: number; errorJson: string }): Promise<void> {
  await q.orm
    .update(smithersSignals)
    .set({ rejectedJson: key.errorJson })
    .where(and(eq(smithersSignals.runId, key.runId), eq(smithersSignals.seq, key.seq)))
    .run();
}
