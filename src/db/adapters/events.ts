/**
 * `_smithers_events`: the per-run event journal. `seq` is allocated as MAX+1 inside
 * BEGIN IMMEDIATE, so concurrent writers (threads or processes) never collide and a run's seqs
 * stay gap-free; re-inserting an identical event returns the seq it already has.
 */
import { and, asc, count, eq, gt, gte, inArray, sql, type InferSelectModel, type SQL } from "drizzle-orm";
import { smithersEvents } from "../internal-schema.ts";
import type { Drizzle, SmithersDb } from "../smithers-db.ts";
import { immediate, insertSql, rawStatement, sqlNames } from "./shared.ts";

export type EventRow = InferSelectModel<typeof smithersEvents>;

/** An event to persist; `payloadJson` is compared byte for byte when de-duplicating. */
export type NewEvent = Omit<EventRow, "seq">;

export type EventHistoryQuery = {
  runId: string;
  /** Only events with seq > afterSeq. */
  afterSeq?: number;
  limit?: number;
  /** Only events whose payload has this `$.nodeId`. */
  nodeId?: string;
  /** Only events of these types (an empty list matches nothing). */
  types?: readonly string[];
  /** Only events at or after this time. */
  sinceTimestampMs?: number;
};

// Unary + keeps SQLite from walking the run's whole key range: the (time, type) index finds the
// few candidates, whatever the statistics say.
const E = sqlNames(smithersEvents);
const FIND_DUPLICATE = `SELECT ${E.seq} AS seq FROM ${E.$table} WHERE +${E.runId} = ? AND ${E.timestampMs} = ? AND ${E.type} = ? AND ${E.payloadJson} = ?`;
const NEXT_SEQ = `SELECT coalesce(max(${E.seq}), -1) + 1 AS next FROM ${E.$table} WHERE ${E.runId} = ?`;
const INSERT_EVENT = insertSql(smithersEvents, ["runId", "seq", "timestampMs", "type", "payloadJson"]);

/**
 * Must run inside BEGIN IMMEDIATE: holding the write lock, the MAX read once per run stays
 * valid for the whole batch, so later events of the same run just count on from it.
 */
function insertInTransaction(d: Drizzle, events: readonly NewEvent[], dedupe = true): number[] {
  const duplicate = dedupe ? rawStatement(d, FIND_DUPLICATE) : undefined;
  const insert = rawStatement(d, INSERT_EVENT);
  const nextByRun = new Map<string, number>();
  return events.map((event) => {
    const found = duplicate?.get(event.runId, event.timestampMs, event.type, event.payloadJson) as { seq: number } | null;
    if (found) return found.seq;
    const seq = nextByRun.get(event.runId) ?? (rawStatement(d, NEXT_SEQ).get(event.runId) as { next: number } | null)?.next ?? 0;
    insert.run(event.runId, seq, event.timestampMs, event.type, event.payloadJson);
    nextByRun.set(event.runId, seq + 1);
    return seq;
  });
}

/**
 * Persists events inside the caller's open BEGIN IMMEDIATE transaction; returns their seqs.
 * `dedupe: false` skips the look-up for an identical stored event: for a writer that knows each
 * event is new (the engine's journal writes every event exactly once, in the transaction of the
 * step that caused it), and where two identical events are two things that happened.
 */
export function insertEventsIn(d: Drizzle, events: readonly NewEvent[], options: { dedupe?: boolean } = {}): number[] {
  return insertInTransaction(d, events, options.dedupe ?? true);
}

/**
 * Persists one event and returns its seq (the existing seq when an identical event is stored).
 * @example
 * const seq = await insertEvent(db, { runId, timestampMs: Date.now(), type: "RunStarted", payloadJson: "{}" });
 */
export function insertEvent(db: SmithersDb, event: NewEvent): Promise<number> {
  return immediate(db, "insertEvent", (d) => insertInTransaction(d, [event])[0] ?? 0);
}

/**
 * Persists many events in one BEGIN IMMEDIATE, in order, with the same seq allocation and
 * de-duplication as `insertEvent`; returns their seqs in input order.
 */
export function insertEvents(db: SmithersDb, events: readonly NewEvent[]): Promise<number[]> {
  if (events.length === 0) return Promise.resolve([]);
  return immediate(db, "insertEvents", (d) => insertInTransaction(d, events));
}

function historyFilter(q: EventHistoryQuery): SQL | undefined {
  const conditions: (SQL | undefined)[] = [eq(smithersEvents.runId, q.runId)];
  if (q.afterSeq !== undefined) conditions.push(gt(smithersEvents.seq, q.afterSeq));
  if (q.sinceTimestampMs !== undefined) conditions.push(gte(smithersEvents.timestampMs, q.sinceTimestampMs));
  if (q.types !== undefined) conditions.push(inArray(smithersEvents.type, [...q.types]));
  if (q.nodeId !== undefined) {
    conditions.push(sql`json_extract(${smithersEvents.payloadJson}, '$.nodeId') = ${q.nodeId}`);
  }
  return and(...conditions);
}

/** A run's events in seq order, filtered. */
export function listEventHistory(db: SmithersDb, query: EventHistoryQuery): Promise<EventRow[]> {
  return db.read("listEventHistory", (d) => {
    const base = d.select().from(smithersEvents).where(historyFilter(query)).orderBy(asc(smithersEvents.seq));
    return query.limit === undefined ? base.all() : base.limit(query.limit).all();
  });
}

/** How many events `listEventHistory` would return without a limit. */
export function countEventHistory(db: SmithersDb, query: Omit<EventHistoryQuery, "limit">): Promise<number> {
  return db.read("countEventHistory", (d) => d.select({ n: count() }).from(smithersEvents).where(historyFilter(query)).get()?.n ?? 0);
}

/** The highest seq stored for a run, or -1 when it has none (resume continues at +1). */
export function lastEventSeq(db: SmithersDb, runId: string): Promise<number> {
  return db.read("lastEventSeq", (d) => ((rawStatement(d, NEXT_SEQ).get(runId) as { next: number } | null)?.next ?? 0) - 1);
}
