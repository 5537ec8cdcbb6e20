/**
 * `_smithers_frames`: the run's plan at each step. A row holds either the whole tree as XML
 * (`full` for frame 0, `keyframe` later) or a JSON delta against the frame before it, in
 * `xml_json`; `xml_hash` is the hash of the frame's XML either way.
 */
import type { InferSelectModel } from "drizzle-orm";
import { and, asc, desc, eq, gte, lte, sql } from "drizzle-orm/sql";
import { smithersFrames } from "../internal-schema.ts";
import type { Sql } from "../sql.ts";
import type { SmithersDb } from "../store.ts";
import { insertRows, insertSql, sqlNames } from "./shared.ts";

export type FrameRow = InferSelectModel<typeof smithersFrames>;
export type FrameEncoding = "full" | "keyframe" | "delta";
export type NewFrame = { runId: string; frameNo: number; createdAtMs: number; encoding: FrameEncoding; body: string; hash: string };
export type FrameSummary = { frameNo: number; encoding: string; bytes: number; createdAtMs: number; hash: string };

const STARTS_CHAIN: FrameEncoding[] = ["full", "keyframe"];

const INSERT_FRAME = insertSql(smithersFrames, ["runId", "frameNo", "createdAtMs", "xmlJson", "xmlHash", "encoding"]);

/** Takes the Drizzle handle so it joins the caller's transaction. */
export async function insertFrame(q: Sql, f: NewFrame): Promise<void> {
  await q.run(INSERT_FRAME, f.runId, f.frameNo, f.createdAtMs, f.body, f.hash, f.encoding);
}

/** insertFrame for several frames, many per statement. */
export async function insertFrames(q: Sql, frames: readonly NewFrame[]): Promise<void> {
  await insertRows(
    q,
    INSERT_FRAME,
    frames.map((f) => [f.runId, f.frameNo, f.createdAtMs, f.body, f.hash, f.encoding]),
  );
}

/** Number, encoding and stored size of every frame of the run, in order. */
export function listFrames(db: SmithersDb, runId: string): Promise<FrameSummary[]> {
  return db.read("listFrames", (q) =>
    q.orm
      .select({
        frameNo: smithersFrames.frameNo,
        encoding: smithersFrames.encoding,
        bytes: sql<number>`octet_length(${smithersFrames.xmlJson})`,
        createdAtMs: smithersFrames.createdAtMs,
        hash: smithersFrames.xmlHash,
      })
      .from(smithersFrames)
      .where(eq(smithersFrames.runId, runId))
      .orderBy(asc(smithersFrames.frameNo))
      .all(),
  );
}

/** The highest frame number of the run, or -1 when it has none. */
export function lastFrameNo(db: SmithersDb, runId: string): Promise<number> {
  return db.read(
    "lastFrameNo",
    async (q) =>
      (
        await q.orm
          .select({ frameNo: smithersFrames.frameNo })
          .from(smithersFrames)
          .where(eq(smithersFrames.runId, runId))
          .orderBy(desc(smithersFrames.frameNo))
          .limit(1)
          .get()
      )?.frameNo ?? -1,
  );
}

/** Every frame row of the run from `fromNo` to `toNo`, in order (a timeline reads them all once). */
export function frameRows(db: SmithersDb, runId: string, fromNo: number, toNo: number): Promise<FrameRow[]> {
  return db.read("frameRows", (q) =>
    q.orm
      .select()
      .from(smithersFrames)
      .where(and(eq(smithersFrames.runId, runId), gte(smithersFrames.frameNo, fromNo), lte(smithersFrames.frameNo, toNo)))
      .orderBy(asc(smithersFrames.frameNo))
      .all(),
  );
}

/** What rebuilding a frame reads of each row of its chain. */
export type FrameChainRow = Pick<FrameRow, "frameNo" | "createdAtMs" | "encoding" | "xmlJson" | "xmlHash">;

const F = sqlNames(smithersFrames);
const CHAIN_START = `SELECT ${F.frameNo} AS "frameNo" FROM ${F.$table}
  WHERE ${F.runId} = ? AND ${F.frameNo} <= ? AND ${F.encoding} IN (${STARTS_CHAIN.map((e) => `'${e}'`).join(", ")})
  ORDER BY ${F.frameNo} DESC LIMIT 1`;
// Plain rows, not Drizzle's: a resume rebuilds its chain from thousands of them (a 10,000-task run:
// 4,051 rows in 6 ms and ~4 MB of RSS, where Drizzle's select of every column took ~40 ms and ~14 MB).
const CHAIN_ROWS = `SELECT ${F.frameNo} AS "frameNo", ${F.createdAtMs} AS "createdAtMs", ${F.encoding} AS encoding,
  ${F.xmlJson} AS "xmlJson", ${F.xmlHash} AS "xmlHash" FROM ${F.$table}
  WHERE ${F.runId} = ? AND ${F.frameNo} >= ? AND ${F.frameNo} <= ? ORDER BY ${F.frameNo}`;

/**
 * The rows needed to rebuild frame `frameNo`: the nearest full/keyframe at or before it, then
 * every frame after that up to `frameNo`, in order. Empty when no chain start exists.
 */
export function frameChain(db: SmithersDb, runId: string, frameNo: number): Promise<FrameChainRow[]> {
  return db.read("frameChain", async (q) => {
    const start = await q.get<{ frameNo: number }>(CHAIN_START, runId, frameNo);
    return start ? await q.all<FrameChainRow>(CHAIN_ROWS, runId, start.frameNo, frameNo) : [];
  });
}
