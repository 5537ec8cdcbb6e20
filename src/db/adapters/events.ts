/**
 * `_smithers_events`: the per-run event journal. `seq` is allocated as MAX+1 inside
 * BEGIN IMMEDIATE, so concurrent writers (threads or processes) never collide and a run's seqs
 * stay gap-free; re-inserting an identical event returns the seq it already has.
 */
import { and, asc, count, eq, gt, gte, inArray, sql, type InferSelectModel, type SQL } from "drizzle-orm";
import { smithersEvents } from "../internal-schema.ts";
import type { Drizzle, SmithersDb } from "../smithers-db.ts";
import { immediate } from "./shared.ts";

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

/** Statements prepared once per connection: the batch path runs them thousands of times. */
function prepare(d: Drizzle) {
  const p = (name: string) => sql.placeholder(name);
  return {
    duplicate: d
      .select({ seq: smithersEvents.seq })
      .from(smithersEvents)
      .where(
        and(
          // Unary + keeps SQLite from walking the run's whole key range: the (time, type) index
          // finds the few candidates, whatever the statistics say.
          sql`+${smithersEvents.runId} = ${p("runId")}`,
          eq(smithersEvents.timestampMs, p("timestampMs")),
          eq(smithersEvents.type, p("type")),
          eq(smithersEvents.payloadJson, p("payloadJson")),
        ),
      )
      .prepare(),
    nextSeq: d
      .select({ next: sql<number>`coalesce(max(${smithersEvents.seq}), -1) + 1` })
      .from(smithersEvents)
      .where(eq(smithersEvents.runId, p("runId")))
      .prepare(),
    insert: d
      .insert(smithersEvents)
      .values({
        runId: p("runId"),
        seq: p("seq"),
        timestampMs: p("timestampMs"),
        type: p("type"),
        payloadJson: p("payloadJson"),
      })
      .prepare(),
  };
}

const prepared = new WeakMap<Drizzle, ReturnType<typeof prepare>>();

function statements(d: Drizzle): ReturnType<typeof prepare> {
  let found = prepared.get(d);
  if (!found) {
    found = prepare(d);
    prepared.set(d, found);
  }
  return found;
}

/**
 * Must run inside BEGIN IMMEDIATE: holding the write lock, the MAX read once per run stays
 * valid for the whole batch, so later events of the same run just count on from it.
 */
function insertInTransaction(d: Drizzle, events: readonly NewEvent[]): number[] {
  const s = statements(d);
  const nextByRun = new Map<string, number>();
  return events.map((event) => {
    const found = s.duplicate.get(event);
    if (found) return found.seq;
    const seq = nextByRun.get(event.runId) ?? s.nextSeq.get({ runId: event.runId })?.next ?? 0;
    s.insert.run({ ...event, seq });
    nextByRun.set(event.runId, seq + 1);
    return seq;
  });
}

/** Persists events inside the caller's open BEGIN IMMEDIATE transaction; returns their seqs. */
export function insertEventsIn(d: Drizzle, events: readonly NewEvent[]): number[] {
  return insertInTransaction(d, events);
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
  return db.read(
    "countEventHistory",
    (d) => d.select({ n: count() }).from(smithersEvents).where(historyFilter(query)).get()?.n ?? 0,
  );
}

/** The highest seq stored for a run, or -1 when it has none (resume continues at +1). */
export function lastEventSeq(db: SmithersDb, runId: string): Promise<number> {
  return db.read("lastEventSeq", (d) => (statements(d).nextSeq.get({ runId })?.next ?? 0) - 1);
}
