/**
 * `_smithers_events`: the per-run event journal. `seq` is allocated as MAX+1 inside
 * BEGIN IMMEDIATE, so concurrent writers (threads or processes) never collide and a run's seqs
 * stay gap-free; re-inserting an identical event returns the seq it already has.
 */
import type { InferSelectModel } from "drizzle-orm";
import { and, asc, count, desc, eq, gt, gte, inArray, sql, type SQL } from "drizzle-orm/sql";
import { smithersEvents } from "../internal-schema.ts";
import { jsonField, perDialect, type Dialect, type Sql } from "../sql.ts";
import type { SmithersDb } from "../store.ts";
import { immediate, insertRows, insertSql, lockRunSequence, sqlNames } from "./shared.ts";

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
// few candidates, whatever the statistics say. (PostgreSQL's planner needs no such hint.)
const E = sqlNames(smithersEvents);
const FIND_DUPLICATE = perDialect(
  (dialect) =>
    `SELECT ${E.seq} AS seq FROM ${E.$table} WHERE ${dialect === "sqlite" ? "+" : ""}${E.runId} = ? AND ${E.timestampMs} = ? AND ${E.type} = ? AND ${E.payloadJson} = ?`,
);
const NEXT_SEQ = `SELECT coalesce(max(${E.seq}), -1) + 1 AS next FROM ${E.$table} WHERE ${E.runId} = ?`;
const INSERT_EVENT = insertSql(smithersEvents, ["runId", "seq", "timestampMs", "type", "payloadJson"]);

/**
 * Must run inside a transaction: on SQLite BEGIN IMMEDIATE holds the write lock, on PostgreSQL
 * a per-run advisory lock (lockRunSequence) serialises writers of the same run's events until
 * the commit. Either way the MAX read once per run stays valid for the whole batch, so later
 * events of the same run just count on from it: no gap, no duplicate.
 */
async function insertInTransaction(q: Sql, events: readonly NewEvent[], dedupe = true): Promise<number[]> {
  const seqOf = seqCounter(q);
  if (!dedupe) {
    // Each event is new: its seq counted on, the rows written many per statement.
    const seqs: number[] = [];
    const rows: unknown[][] = [];
    for (const e of events) {
      const counted = seqOf(e.runId);
      const seq = typeof counted === "number" ? counted : await counted;
      seqs.push(seq);
      rows.push([e.runId, seq, e.timestampMs, e.type, e.payloadJson]);
    }
    await insertRows(q, INSERT_EVENT, rows);
    return seqs;
  }
  const seqs: number[] = [];
  for (const event of events) {
    // One at a time: an identical event earlier in the same batch is found as stored.
    const found = await q.get<{ seq: number }>(FIND_DUPLICATE[q.dialect], event.runId, event.timestampMs, event.type, event.payloadJson);
    if (found) {
      seqs.push(found.seq);
      continue;
    }
    const seq = await seqOf(event.runId);
    await q.run(INSERT_EVENT, event.runId, seq, event.timestampMs, event.type, event.payloadJson);
    seqs.push(seq);
  }
  return seqs;
}

/** The next seq of each run within one transaction: the run's sequence locked and its MAX read once, then counted on. */
function seqCounter(q: Sql): (runId: string) => number | Promise<number> {
  const nextByRun = new Map<string, number>();
  const first = async (runId: string) => {
    // Sent together (one round trip on PostgreSQL): the MAX runs after the lock is granted, on the same connection.
    const [, row] = await Promise.all([lockRunSequence(q, "events", runId), q.get<{ next: number }>(NEXT_SEQ, runId)]);
    const seq = row?.next ?? 0;
    nextByRun.set(runId, seq + 1);
    return seq;
  };
  // After the first of a run, counting on needs no await (a batch numbers its events in one go).
  return (runId) => {
    const seq = nextByRun.get(runId);
    if (seq === undefined) return first(runId);
    nextByRun.set(runId, seq + 1);
    return seq;
  };
}

/**
 * Persists events inside the caller's open transaction; returns their seqs.
 * `dedupe: false` skips the look-up for an identical stored event: for a writer that knows each
 * event is new (the engine's journal writes every event exactly once, in the transaction of the
 * step that caused it), and where two identical events are two things that happened.
 */
export function insertEventsIn(q: Sql, events: readonly NewEvent[], options: { dedupe?: boolean } = {}): Promise<number[]> {
  return insertInTransaction(q, events, options.dedupe ?? true);
}

/**
 * Persists one event and returns its seq (the existing seq when an identical event is stored).
 * @example
 * const seq = await insertEvent(db, { runId, timestampMs: Date.now(), type: "RunStarted", payloadJson: "{}" });
 */
export function insertEvent(db: SmithersDb, event: NewEvent): Promise<number> {
  return immediate(db, "insertEvent", async (q) => (await insertInTransaction(q, [event]))[0] ?? 0);
}

/**
 * Persists many events in one BEGIN IMMEDIATE, in order, with the same seq allocation and
 * de-duplication as `insertEvent`; returns their seqs in input order.
 */
export function insertEvents(db: SmithersDb, events: readonly NewEvent[]): Promise<number[]> {
  if (events.length === 0) return Promise.resolve([]);
  return immediate(db, "insertEvents", (q) => insertInTransaction(q, events));
}

function historyFilter(q: EventHistoryQuery, dialect: Dialect): SQL | undefined {
  const conditions: (SQL | undefined)[] = [eq(smithersEvents.runId, q.runId)];
  if (q.afterSeq !== undefined) conditions.push(gt(smithersEvents.seq, q.afterSeq));
  if (q.sinceTimestampMs !== undefined) conditions.push(gte(smithersEvents.timestampMs, q.sinceTimestampMs));
  if (q.types !== undefined) conditions.push(inArray(smithersEvents.type, [...q.types]));
  if (q.nodeId !== undefined) {
    conditions.push(sql`${sql.raw(jsonField(dialect, E.payloadJson, "nodeId"))} = ${q.nodeId}`);
  }
  return and(...conditions);
}

/** A run's events in seq order, filtered. */
export function listEventHistory(db: SmithersDb, query: EventHistoryQuery): Promise<EventRow[]> {
  return db.read("listEventHistory", (q) => {
    const base = q.orm.select().from(smithersEvents).where(historyFilter(query, q.dialect)).orderBy(asc(smithersEvents.seq));
    return query.limit === undefined ? base.all() : base.limit(query.limit).all();
  });
}

/** How many events `listEventHistory` would return without a limit. */
export function countEventHistory(db: SmithersDb, query: Omit<EventHistoryQuery, "limit">): Promise<number> {
  return db.read(
    "countEventHistory",
    async (q) => (await q.orm.select({ n: count() }).from(smithersEvents).where(historyFilter(query, q.dialect)).get())?.n ?? 0,
  );
}

/** The highest seq stored for a run, or -1 when it has none (resume continues at +1). */
export function lastEventSeq(db: SmithersDb, runId: string): Promise<number> {
  return db.read("lastEventSeq", async (q) => ((await q.get<{ next: number }>(NEXT_SEQ, runId))?.next ?? 0) - 1);
}

/**
 * Of each run, its latest event among `types`, by run id, in one statement: what `ps`
 * reads to say a waiting or stale run's last resume failed.
 */
export function latestEventsOf(db: SmithersDb, runIds: readonly string[], types: readonly string[]): Promise<Map<string, EventRow>> {
  if (runIds.length === 0) return Promise.resolve(new Map());
  return db.read("latestEventsOf", async (q) => {
    // One statement for all the runs (these types are a few rows per run); the first row of each run is its latest.
    const rows = await q.orm
      .select()
      .from(smithersEvents)
      .where(and(inArray(smithersEvents.runId, [...runIds]), inArray(smithersEvents.type, [...types])))
      .orderBy(asc(smithersEvents.runId), desc(smithersEvents.seq))
      .all();
    const latest = new Map<string, EventRow>();
    for (const row of rows) if (!latest.has(row.runId)) latest.set(row.runId, row);
    return latest;
  });
}
