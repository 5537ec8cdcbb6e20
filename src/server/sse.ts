/**
 * `GET /runs/:id/events`: a run's journal as server-sent events. Replay and live follow are one
 * loop over `_smithers_events` by seq: each pass sends the rows with seq > the last one sent, so
 * the switch from stored to live events can neither skip nor repeat one. A run's seqs are
 * allocated MAX+1 under the write lock and commit in order, so a reader never sees seq n+1
 * before n. Each SSE `id` is the stored seq: `Last-Event-ID` resumes exactly after it.
 */
import type { Context } from "hono";
import { streamSSE } from "hono/streaming";
import { events, queue, runs, type SmithersDb } from "../db/index.ts";
import { isOver } from "../engine/index.ts";

const PAGE = 500;

/** The key `waitForEvent` takes to wake at the next event of any run. */
export const ANY_RUN = "*";

export type FollowOptions = {
  db: SmithersDb;
  /** Pause between polls when nothing woke the stream. */
  pollMs: number;
  /** A comment line this often keeps proxies and idle timeouts from closing a quiet stream. */
  heartbeatMs: number;
  /** Resolves at the next event of `runId` (ANY_RUN: of any run) this process hears (or after `ms`). */
  waitForEvent: (runId: string, ms: number) => Promise<void>;
};

/** The seq to send after: `Last-Event-ID` when the client sent one, else `?afterSeq`, else -1 (everything). */
export function startSeq(lastEventId: string | undefined, afterSeq: string | undefined): number | undefined {
  for (const text of [lastEventId, afterSeq]) {
    if (text === undefined || text.trim() === "") continue;
    const n = Number(text);
    return Number.isInteger(n) && n >= -1 ? n : undefined;
  }
  return -1;
}

/**
 * Streams the run's events after `after`, then follows it. The stream ends once the run has
 * ended (finished, failed, cancelled, continued), is not queued to run again, and every event
 * was sent; a waiting run's stream stays open (a resume continues its journal).
 */
export function followRun(c: Context, o: FollowOptions, runId: string, after: number): Response {
  return streamSSE(c, async (stream) => {
    let last = after;
    let lastWrite = Date.now();
    while (!stream.aborted) {
      // Status first: events committed before the run ended are visible to the read after it.
      const run = await runs.getRun(o.db, runId);
      // (a claimed request that has not written its run row yet counts as pending too)
      const over = run !== undefined && isOver(run.status) && (await queue.getRequest(o.db, runId)) === undefined;
      let page: events.EventRow[];
      do {
        page = await events.listEventHistory(o.db, { runId, afterSeq: last, limit: PAGE });
        for (const row of page) {
          const data = JSON.stringify({ ...JSON.parse(row.payloadJson), type: row.type, runId: row.runId, seq: row.seq, timestampMs: row.timestampMs });
          await stream.writeSSE({ id: String(row.seq), event: row.type, data });
          last = row.seq;
          lastWrite = Date.now();
        }
      } while (page.length === PAGE && !stream.aborted);
      if (over) break;
      if (Date.now() - lastWrite >= o.heartbeatMs) {
        await stream.write(": keep-alive\n\n");
        lastWrite = Date.now();
      }
      await o.waitForEvent(runId, o.pollMs);
    }
  });
}
