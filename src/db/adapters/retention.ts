/**
 * Retention: the SQL behind `smithers prune`. Which ended runs are old enough, what pruning one
 * would remove, and the deletes themselves (frames between the first and the last, events
 * between the first and the last). Output tables, nodes and attempts are never touched here.
 */
import { statSync } from "node:fs";
import { and, asc, count, desc, eq, gt, inArray, isNotNull, lt, sql } from "drizzle-orm";
import { smithersEvents, smithersFrames, smithersRuns } from "../internal-schema.ts";
import type { Drizzle, SmithersDb } from "../smithers-db.ts";

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
  return db.read("listPrunableRuns", (d) =>
    d
      .select({ runId: smithersRuns.runId, status: smithersRuns.status, finishedAtMs: sql<number>`${smithersRuns.finishedAtMs}` })
      .from(smithersRuns)
      .where(and(inArray(smithersRuns.status, [...PRUNABLE_STATUSES]), isNotNull(smithersRuns.finishedAtMs), lt(smithersRuns.finishedAtMs, finishedBeforeMs)))
      .orderBy(asc(smithersRuns.finishedAtMs), asc(smithersRuns.runId))
      .all(),
  );
}

/** The run's status read inside the caller's transaction (undefined: no such run). */
export function runStatusIn(d: Drizzle, runId: string): string | undefined {
  return d.select({ status: smithersRuns.status }).from(smithersRuns).where(eq(smithersRuns.runId, runId)).get()?.status;
}

const bodyBytes = (column: typeof smithersFrames.xmlJson | typeof smithersEvents.payloadJson) => sql<number>`coalesce(sum(length(CAST(${column} AS BLOB))), 0)`;

function eventEnds(d: Drizzle, runId: string): { first: number; last: number } | undefined {
  const row = d
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
export function countPrunableIn(d: Drizzle, runId: string): PruneCounts {
  const last = d
    .select({ frameNo: smithersFrames.frameNo, encoding: smithersFrames.encoding })
    .from(smithersFrames)
    .where(eq(smithersFrames.runId, runId))
    .orderBy(desc(smithersFrames.frameNo))
    .limit(1)
    .get();
  const lastFrameNo = last?.frameNo ?? -1;
  const f = d
    .select({ n: count(), bytes: bodyBytes(smithersFrames.xmlJson) })
    .from(smithersFrames)
    .where(middleFrames(runId, lastFrameNo))
    .get();
  const ends = eventEnds(d, runId);
  const e = ends
    ? d
        .select({ n: count(), bytes: bodyBytes(smithersEvents.payloadJson) })
        .from(smithersEvents)
        .where(middleEvents(runId, ends))
        .get()
    : undefined;
  return {
    frames: f?.n ?? 0,
    frameBytes: f?.bytes ?? 0,
    events: e?.n ?? 0,
    eventBytes: e?.bytes ?? 0,
    lastFrameNo,
    lastFrameEncoding: last?.encoding ?? null,
  };
}

/** countPrunableIn as a queued read (a dry run). */
export function countPrunable(db: SmithersDb, runId: string): Promise<PruneCounts> {
  return db.read("countPrunable", (d) => countPrunableIn(d, runId));
}

/**
 * Stores frame `frameNo` as a keyframe holding its whole XML (its hash is unchanged: the same
 * tree), so it no longer needs the frames before it to be read.
 */
export function storeAsKeyframe(d: Drizzle, runId: string, frameNo: number, xml: string): void {
  d.update(smithersFrames)
    .set({ encoding: frameNo === 0 ? "full" : "keyframe", xmlJson: xml })
    .where(and(eq(smithersFrames.runId, runId), eq(smithersFrames.frameNo, frameNo)))
    .run();
}

/** Deletes the frames strictly between frame 0 and `lastFrameNo`; returns how many. */
export function deleteMiddleFrames(d: Drizzle, runId: string, lastFrameNo: number): number {
  return d.delete(smithersFrames).where(middleFrames(runId, lastFrameNo)).returning({ n: smithersFrames.frameNo }).all().length;
}

/** Deletes the run's events strictly between its first and its last (the last keeps resume's seq numbering); returns how many. */
export function deleteMiddleEvents(d: Drizzle, runId: string): number {
  const ends = eventEnds(d, runId);
  if (!ends) return 0;
  return d.delete(smithersEvents).where(middleEvents(runId, ends)).returning({ n: smithersEvents.seq }).all().length;
}

export type StorageSize = {
  /** The database file plus its WAL, in bytes (pages in use times page size for `:memory:`). */
  fileBytes: number;
  /** Pages inside the file that are free for reuse, in bytes. */
  freeBytes: number;
};

/** How big the database is on disk and how much of it is free pages. */
export function storageSize(db: SmithersDb): Promise<StorageSize> {
  return db.read("storageSize", () => {
    const pragma = (name: string) => Number(Object.values(db.sqlite.query(`PRAGMA ${name}`).get() as Record<string, number>)[0] ?? 0);
    const pageSize = pragma("page_size");
    const freeBytes = pragma("freelist_count") * pageSize;
    if (db.path === ":memory:" || db.path === "") return { fileBytes: pragma("page_count") * pageSize, freeBytes };
    const size = (path: string) => {
      try {
        return statSync(path).size;
      } catch {
        return 0;
      }
    };
    return { fileBytes: size(db.path) + size(`${db.path}-wal`), freeBytes };
  });
}

/** Rewrites the file without its free pages (VACUUM) and truncates the WAL, so the file shrinks. */
export function vacuum(db: SmithersDb): Promise<void> {
  return db.write("vacuum", () => {
    db.sqlite.exec("VACUUM");
    if (db.path !== ":memory:") db.sqlite.query("PRAGMA wal_checkpoint(TRUNCATE)").get();
  });
}

/** Deletes (or, with `dryRun`, counts) the events of `pseudoRunId` older than `beforeMs`: journals of no run, such as the server's refusals. */
export function pruneEventsBefore(db: SmithersDb, pseudoRunId: string, beforeMs: number, dryRun: boolean): Promise<number> {
  const where = and(eq(smithersEvents.runId, pseudoRunId), lt(smithersEvents.timestampMs, beforeMs));
  if (dryRun) return db.read("countOldEvents", (d) => d.select({ n: count() }).from(smithersEvents).where(where).get()?.n ?? 0);
  return db.write("pruneOldEvents", (d) => d.delete(smithersEvents).where(where).returning({ n: smithersEvents.seq }).all().length);
}
