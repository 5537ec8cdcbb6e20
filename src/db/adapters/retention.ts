/**
 * Retention: the SQL behind `smithers prune`. Which ended runs are old enough, what pruning one
 * would remove, and the deletes themselves (frames between the first and the last, events
 * between the first and the last). Output tables, nodes and attempts are never touched here.
 */
import { and, asc, count, desc, eq, gt, inArray, isNotNull, lt, sql } from "drizzle-orm/sql";
import { smithersEvents, smithersFrames, smithersRuns } from "../internal-schema.ts";
import type { Sql } from "../sql.ts";
import type { SmithersDb, StorageSize } from "../store.ts";

/** Statuses after which a run's journal is history: it never runs again without an explicit resume. */
export const PRUNABLE_STATUSES = ["finished", "continued", "failed", "cancelled"] as const;

export type PrunableRun = { runId: string; status: string; finishedAtMs: number };

/** What pruning one run removes (or would): rows and the bytes of their stored bodies. */
export type PruneCounts = {
  frames: number;
  frameBytes: number;
  events: number;
  eventBytes: number;
  /** The run's highest frame number (-1: no frames) and how it is stored. */
  lastFrameNo: number;
  lastFrameEncoding: string | null;
};

/** Runs in a prunable status that finished before `finishedBeforeMs`, oldest first. */
export function listPrunableRuns(db: SmithersDb, finishedBeforeMs: number): Promise<PrunableRun[]> {
  return db.read("listPrunableRuns", (q) =>
    q.orm
      .select({ runId: smithersRuns.runId, status: smithersRuns.status, finishedAtMs: sql<number>`${smithersRuns.finishedAtMs}` })
      .from(smithersRuns)
      .where(and(inArray(smithersRuns.status, [...PRUNABLE_STATUSES]), isNotNull(smithersRuns.finishedAtMs), lt(smithersRuns.finishedAtMs, finishedBeforeMs)))
      .orderBy(asc(smithersRuns.finishedAtMs), asc(smithersRuns.runId))
      .all(),
  );
}

/** The run's status read inside the caller's transaction (undefined: no such run). */
export async function runStatusIn(q: Sql, runId: string): Promise<string | undefined> {
  return (await q.orm.select({ status: smithersRuns.status }).from(smithersRuns).where(eq(smithersRuns.runId, runId)).get())?.status;
}

const bodyBytes = (column: typeof smithersFrames.xmlJson | typeof smithersEvents.payloadJson) => sql<number>`coalesce(sum(octet_length(${column})), 0)`;

async function eventEnds(q: Sql, runId: string): Promise<{ first: number; last: number } | undefined> {
  const row = await q.orm
    .select({ first: sql<number | null>`min(${smithersEvents.seq})`, last: sql<number | null>`max(${smithersEvents.seq})` })
    .from(smithersEvents)
    .where(eq(smithersEvents.runId, runId))
    .get();
  return row?.first == null || row.last == null ? undefined : { first: row.first, last: row.last };
}

const middleFrames = (runId: string, lastFrameNo: number) =>
  and(eq(smithersFrames.runId, runId), gt(smithersFrames.frameNo, 0), lt(smithersFrames.frameNo, lastFrameNo));
const middleEvents = (runId: string, ends: { first: number; last: number }) =>
  and(eq(smithersEvents.runId, runId), gt(smithersEvents.seq, ends.first), lt(smithersEvents.seq, ends.last));

/** What pruning the run removes: frames strictly between 0 and the last, events strictly between its first and last. */
export async function countPrunableIn(q: Sql, runId: string): Promise<PruneCounts> {
  const last = await q.orm
    .select({ frameNo: smithersFrames.frameNo, encoding: smithersFrames.encoding })
    .from(smithersFrames)
    .where(eq(smithersFrames.runId, runId))
    .orderBy(desc(smithersFrames.frameNo))
    .limit(1)
    .get();
  const lastFrameNo = last?.frameNo ?? -1;
  const f = await q.orm
    .select({ n: count(), bytes: bodyBytes(smithersFrames.xmlJson) })
    .from(smithersFrames)
    .where(middleFrames(runId, lastFrameNo))
    .get();
  const ends = await eventEnds(q, runId);
  const e = ends
    ? await q.orm
        .select({ n: count(), bytes: bodyBytes(smithersEvents.payloadJson) })
        .from(smithersEvents)
        .where(middleEvents(runId, ends))
        .get()
    : undefined;
  return {
    frames: Number(f?.n ?? 0),
    frameBytes: Number(f?.bytes ?? 0),
    events: Number(e?.n ?? 0),
    eventBytes: Number(e?.bytes ?? 0),
    lastFrameNo,
    lastFrameEncoding: last?.encoding ?? null,
  };
}

/** countPrunableIn as a queued read (a dry run). */
export function countPrunable(db: SmithersDb, runId: string): Promise<PruneCounts> {
  return db.read("countPrunable", (q) => countPrunableIn(q, runId));
}

/**
 * Stores frame `frameNo` as a keyframe holding its whole XML (its hash is unchanged: the same
 * tree), so it no longer needs the frames before it to be read.
 */
export async function storeAsKeyframe(q: Sql, runId: string, frameNo: number, xml: string): Promise<void> {
  await q.orm
    .update(smithersFrames)
    .set({ encoding: frameNo === 0 ? "full" : "keyframe", xmlJson: xml })
    .where(and(eq(smithersFrames.runId, runId), eq(smithersFrames.frameNo, frameNo)))
    .run();
}

/** Deletes the frames strictly between frame 0 and `lastFrameNo`; returns how many. */
export async function deleteMiddleFrames(q: Sql, runId: string, lastFrameNo: number): Promise<number> {
  return (await q.orm.delete(smithersFrames).where(middleFrames(runId, lastFrameNo)).returning({ n: smithersFrames.frameNo }).all()).length;
}

/** Deletes the run's events strictly between its first and its last (the last keeps resume's seq numbering); returns how many. */
export async function deleteMiddleEvents(q: Sql, runId: string): Promise<number> {
  const ends = await eventEnds(q, runId);
  if (!ends) return 0;
  return (await q.orm.delete(smithersEvents).where(middleEvents(runId, ends)).returning({ n: smithersEvents.seq }).all()).length;
}

/** How big the database is and how much of it is free (see SmithersDb.storageSize). */
export function storageSize(db: SmithersDb): Promise<StorageSize> {
  return db.storageSize();
}

/** Gives free space back to the file system (see SmithersDb.vacuum). */
export function vacuum(db: SmithersDb): Promise<void> {
  return db.vacuum();
}

/** Deletes (or, with `dryRun`, counts) the events of `pseudoRunId` older than `beforeMs`: journals of no run, such as the server's refusals. */
export function pruneEventsBefore(db: SmithersDb, pseudoRunId: string, beforeMs: number, dryRun: boolean): Promise<number> {
  const where = and(eq(smithersEvents.runId, pseudoRunId), lt(smithersEvents.timestampMs, beforeMs));
  if (dryRun) return db.read("countOldEvents", async (q) => (await q.orm.select({ n: count() }).from(smithersEvents).where(where).get())?.n ?? 0);
  return db.write("pruneOldEvents", async (q) => (await q.orm.delete(smithersEvents).where(where).returning({ n: smithersEvents.seq }).all()).length);
}
