/**
 * Retention: shrinks the journal of runs that ended long enough ago. For each such run it keeps
 * frame 0 and the last frame (stored as a keyframe first, so it reads back without the frames
 * before it), the first event and the last one (a resumed failed or cancelled run numbers its
 * new events after it), and every output, node and attempt row; everything between goes.
 * Each run is pruned in its own BEGIN IMMEDIATE with its status checked again inside, so a
 * resume that started meanwhile is never pruned under it.
 */
import { limits, retention, type SmithersDb } from "../../db/index.ts";
import { SmithersError } from "../../errors/index.ts";
import { DEFAULT_RETENTION_MS } from "../core/index.ts";
import { clearFrameCache, readFrameXml } from "./frames.ts";
import { SERVER_RUN_ID } from "../core/index.ts";

export type PruneOptions = {
  /** Prune runs that ended at least this long before `nowMs` (default 7 days). */
  olderThanMs?: number;
  /** Report what would go and change nothing. */
  dryRun?: boolean;
  /** VACUUM afterwards (and truncate the WAL) so the file itself shrinks. */
  vacuum?: boolean;
  nowMs?: number;
};

export type PrunedRun = {
  runId: string;
  status: string;
  framesRemoved: number;
  eventsRemoved: number;
  /** Bytes of the removed frame and event bodies. */
  rowBytes: number;
  /** The last frame was a delta and is now stored whole. */
  lastFrameRewritten: boolean;
};

export type PruneReport = {
  dryRun: boolean;
  vacuumed: boolean;
  /** Runs that ended before this time were considered. */
  cutoffMs: number;
  runs: PrunedRun[];
  /** Runs left as they were: their status changed meanwhile, or their last frame cannot be rebuilt. */
  skipped: { runId: string; reason: string }[];
  framesRemoved: number;
  eventsRemoved: number;
  rowBytes: number;
  /** The file (and WAL) before and after; they differ only with `vacuum`. */
  fileBytesBefore: number;
  fileBytesAfter: number;
  /** Free pages inside the file after pruning, in bytes: reused by later writes, returned to the disk by VACUUM. */
  freeBytes: number;
  /** With vacuum: how much smaller the file got; without: how many bytes of pages pruning freed inside it. */
  bytesFreed: number;
};

/**
 * Prunes the frames and events of runs that finished, failed, were cancelled or continued before
 * `nowMs - olderThanMs`; never a running or waiting run. Returns what was (or, with `dryRun`,
 * would be) removed.
 * @example
 * const report = await pruneRuns(db, { olderThanMs: 7 * 86_400_000, vacuum: true });
 */
export async function pruneRuns(db: SmithersDb, options: PruneOptions = {}): Promise<PruneReport> {
  const olderThanMs = options.olderThanMs ?? DEFAULT_RETENTION_MS;
  if (!(Number.isFinite(olderThanMs) && olderThanMs >= 0))
    throw new SmithersError("INVALID_OPTION", `olderThanMs must be a number of milliseconds, 0 or more, got ${olderThanMs}`);
  const dryRun = options.dryRun ?? false;
  const cutoffMs = (options.nowMs ?? Date.now()) - olderThanMs;
  const before = await retention.storageSize(db);
  const report: PruneReport = {
    dryRun,
    vacuumed: false,
    cutoffMs,
    runs: [],
    skipped: [],
    framesRemoved: 0,
    eventsRemoved: 0,
    rowBytes: 0,
    fileBytesBefore: before.fileBytes,
    fileBytesAfter: before.fileBytes,
    freeBytes: before.freeBytes,
    bytesFreed: 0,
  };
  for (const candidate of await retention.listPrunableRuns(db, cutoffMs)) {
    const outcome = dryRun ? await measureRun(db, candidate) : await pruneRun(db, candidate);
    if (typeof outcome === "string") report.skipped.push({ runId: candidate.runId, reason: outcome });
    else if (outcome) {
      report.runs.push(outcome);
      report.framesRemoved += outcome.framesRemoved;
      report.eventsRemoved += outcome.eventsRemoved;
      report.rowBytes += outcome.rowBytes;
    }
  }
  // The server's refusals (RunRefused under its pseudo-run) have no run to end: they go by age.
  report.eventsRemoved += await retention.pruneEventsBefore(db, SERVER_RUN_ID, cutoffMs, dryRun);
  if (dryRun) return report;
  // Cached trees of deleted frames would otherwise still be served.
  if (report.runs.length > 0) clearFrameCache();
  if (options.vacuum) {
    await retention.vacuum(db);
    report.vacuumed = true;
  }
  const after = await retention.storageSize(db);
  report.fileBytesAfter = after.fileBytes;
  report.freeBytes = after.freeBytes;
  report.bytesFreed = options.vacuum ? Math.max(0, before.fileBytes - after.fileBytes) : Math.max(0, after.freeBytes - before.freeBytes);
  return report;
}

type Candidate = retention.PrunableRun;

/** The run's result, undefined when there is nothing to remove, or why it was skipped. */
type Outcome = PrunedRun | undefined | string;

const needsRewrite = (counts: retention.PruneCounts) => counts.frames > 0 && counts.lastFrameEncoding === "delta";

function outcomeOf(run: Candidate, counts: retention.PruneCounts, framesRemoved: number, eventsRemoved: number): Outcome {
  if (framesRemoved === 0 && eventsRemoved === 0) return undefined;
  return {
    runId: run.runId,
    status: run.status,
    framesRemoved,
    eventsRemoved,
    rowBytes: counts.frameBytes + counts.eventBytes,
    lastFrameRewritten: needsRewrite(counts),
  };
}

async function measureRun(db: SmithersDb, run: Candidate): Promise<Outcome> {
  const counts = await retention.countPrunable(db, run.runId);
  return outcomeOf(run, counts, counts.frames, counts.events);
}

function pruneRun(db: SmithersDb, run: Candidate): Promise<Outcome> {
  return db.withTransaction("pruneRun", async (q) => {
    const status = await retention.runStatusIn(q, run.runId);
    if (status !== run.status) return `its status changed to ${status ?? "(deleted)"}`;
    const counts = await retention.countPrunableIn(q, run.runId);
    let framesRemoved = 0;
    if (counts.frames > 0) {
      if (needsRewrite(counts)) {
        let xml: string;
        try {
          xml = await readFrameXml(db, run.runId, counts.lastFrameNo);
        } catch (error) {
          if (SmithersError.is(error, "FRAME_CORRUPT") || SmithersError.is(error, "FRAME_NOT_FOUND"))
            return `its last frame cannot be rebuilt (${error.message})`;
          throw error;
        }
        await retention.storeAsKeyframe(q, run.runId, counts.lastFrameNo, xml);
      }
      framesRemoved = await retention.deleteMiddleFrames(q, run.runId, counts.lastFrameNo);
    }
    const eventsRemoved = await retention.deleteMiddleEvents(q, run.runId);
    await limits.deleteRunRows(q, run.runId); // a slot or a wait left by a run cancelled while it waited
    return outcomeOf(run, counts, framesRemoved, eventsRemoved);
  });
}
