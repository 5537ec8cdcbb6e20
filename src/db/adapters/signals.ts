/**
 * `_smithers_signals`: inbound messages for waiting runs. Like events, `seq` is MAX+1 under
 * BEGIN IMMEDIATE, and a signal identical in all six fields is stored once (replays and client
 * retries return the seq it already has).
 */
import { and, asc, eq, gt, gte, isNull, sql, type InferSelectModel, type SQL } from "drizzle-orm";
import { SIGNAL_QUERY_LIMIT } from "../constants.ts";
import { smithersSignals } from "../internal-schema.ts";
import type { Drizzle, SmithersDb } from "../smithers-db.ts";
import { immediate, isSame } from "./shared.ts";

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
export function insertSignalIn(d: Drizzle, signal: NewSignal): number {
  return insertOrFindIn(d, signal).seq;
}

/** insertSignalIn that also says whether the signal was already stored (same key, or identical in every field). */
export function insertOrFindIn(d: Drizzle, signal: NewSignal): { seq: number; duplicate: boolean } {
  const row = { ...signal, correlationId: signal.correlationId ?? null, receivedBy: signal.receivedBy ?? null, dedupeKey: signal.dedupeKey ?? null };
  if (row.dedupeKey !== null) {
    const keyed = d
      .select({ seq: smithersSignals.seq })
      .from(smithersSignals)
      .where(and(eq(smithersSignals.runId, row.runId), eq(smithersSignals.dedupeKey, row.dedupeKey)))
      .get();
    if (keyed) return { seq: keyed.seq, duplicate: true };
  }
  const existing = d
    .select({ seq: smithersSignals.seq })
    .from(smithersSignals)
    .where(
      and(
        eq(smithersSignals.runId, row.runId),
        eq(smithersSignals.signalName, row.signalName),
        isSame(smithersSignals.correlationId, row.correlationId),
        eq(smithersSignals.payloadJson, row.payloadJson),
        eq(smithersSignals.receivedAtMs, row.receivedAtMs),
        isSame(smithersSignals.receivedBy, row.receivedBy),
      ),
    )
    .get();
  if (existing) return { seq: existing.seq, duplicate: true };
  const seq =
    d
      .select({ next: sql<number>`coalesce(max(${smithersSignals.seq}), -1) + 1` })
      .from(smithersSignals)
      .where(eq(smithersSignals.runId, row.runId))
      .get()?.next ?? 0;
  d.insert(smithersSignals)
    .values({ ...row, seq })
    .run();
  return { seq, duplicate: false };
}

/**
 * Stores a signal and returns its seq (the existing seq for an identical signal).
 * @example
 * const seq = await insertSignal(db, { runId, signalName: "approved", payloadJson: "{}", receivedAtMs: Date.now() });
 */
export function insertSignal(db: SmithersDb, signal: NewSignal): Promise<number> {
  return immediate(db, "insertSignal", (d) => insertSignalIn(d, signal));
}

/** A run's signals in seq (arrival) order. */
export function querySignals(db: SmithersDb, query: SignalQuery): Promise<SignalRow[]> {
  const conditions: (SQL | undefined)[] = [eq(smithersSignals.runId, query.runId)];
  if (query.signalName !== undefined) conditions.push(eq(smithersSignals.signalName, query.signalName));
  if (query.correlationId === null) conditions.push(isNull(smithersSignals.correlationId));
  else if (query.correlationId !== undefined) conditions.push(eq(smithersSignals.correlationId, query.correlationId));
  if (query.receivedAfterMs !== undefined) conditions.push(gte(smithersSignals.receivedAtMs, query.receivedAfterMs));
  return db.read("querySignals", (d) =>
    d
      .select()
      .from(smithersSignals)
      .where(and(...conditions))
      .orderBy(asc(smithersSignals.seq))
      .limit(query.limit ?? SIGNAL_QUERY_LIMIT)
      .all(),
  );
}

/** A run's signals no node took or refused yet, in seq order, after `afterSeq` (what waiting nodes are offered). */
export function readOpenSignals(d: Drizzle, runId: string, afterSeq = -1): SignalRow[] {
  return d
    .select()
    .from(smithersSignals)
    .where(and(eq(smithersSignals.runId, runId), gt(smithersSignals.seq, afterSeq), isNull(smithersSignals.consumedAtMs), isNull(smithersSignals.rejectedJson)))
    .orderBy(asc(smithersSignals.seq))
    .limit(SIGNAL_QUERY_LIMIT)
    .all();
}

/** Records that a node took the signal (inside the step that stores the node's row). */
export function consumeSignal(d: Drizzle, key: { runId: string; seq: number; nodeId: string; iteration: number; atMs: number }): void {
  d.update(smithersSignals)
    .set({ consumedByNodeId: key.nodeId, consumedByIteration: key.iteration, consumedAtMs: key.atMs })
    .where(and(eq(smithersSignals.runId, key.runId), eq(smithersSignals.seq, key.seq)))
    .run();
}

/** Records that the node it was offered to refused the signal's payload; it is not offered again. */
export function rejectSignal(d: Drizzle, key: { runId: string; seq: number; errorJson: string }): void {
  d.update(smithersSignals)
    .set({ rejectedJson: key.errorJson })
    .where(and(eq(smithersSignals.runId, key.runId), eq(smithersSignals.seq, key.seq)))
    .run();
}
