/**
 * `smithers events <run> [--after-seq N] [--type T] [--node ID] [--follow] [--json]`: a run's
 * event journal (`_smithers_events`) in seq order. `--follow` polls by seq until the run has
 * ended and every event up to its end was printed; a run still queued for workers is waited for.
 */
import { parseArgs } from "./parse-args.ts";
import { events, queue, runs, type SmithersDb } from "../db/index.ts";
import { isOver, type SmithersEvent } from "../engine/core/index.ts";
import { EVENT_TYPES } from "../contract/index.ts";
import { SmithersError } from "../errors/index.ts";
import { formatEvent } from "./progress.ts";
import { EXIT, nonNegativeNumber, openExistingDb, usageError, type Io } from "./shared.ts";

/** How often `--follow` looks for new events. */
export const FOLLOW_POLL_MS = 200;

/** An event as `events --json` prints it, one per line: the journal's columns, then the payload's fields. */
export type EventLine = { seq: number; runId: string; type: string; timestampMs: number } & Record<string, unknown>;

export function eventLine(row: events.EventRow): EventLine {
  let payload: Record<string, unknown> = {};
  try {
    const parsed = JSON.parse(row.payloadJson) as unknown;
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) payload = parsed as Record<string, unknown>;
  } catch {
    // A payload that does not parse is shown by its columns alone.
  }
  const columns = { seq: row.seq, runId: row.runId, type: row.type, timestampMs: row.timestampMs };
  // The columns first (a stable order), and they win over a payload field of the same name.
  return Object.assign({ ...columns }, payload, columns);
}

/** One text line: seq, time, and the progress line of the event (or its type and node). */
export function formatEventLine(e: EventLine): string {
  const time = new Date(e.timestampMs).toISOString();
  const shown = formatEvent(e as unknown as SmithersEvent) ?? `${e.type}${typeof e.nodeId === "string" ? ` ${e.nodeId}` : ""}`;
  return `${String(e.seq).padStart(4)} ${time} ${shown}`;
}

type Filter = { runId: string; types?: string[]; nodeId?: string };

/** Prints the events after `afterSeq` matching `filter`; returns the last seq looked at. */
async function printAfter(db: SmithersDb, filter: Filter, afterSeq: number | undefined, json: boolean, io: Io): Promise<number | undefined> {
  const rows = await events.listEventHistory(db, { ...filter, afterSeq });
  for (const row of rows) {
    const line = eventLine(row);
    io.out(json ? JSON.stringify(line) : formatEventLine(line));
  }
  return rows.at(-1)?.seq ?? afterSeq;
}

export async function eventsCommand(args: string[], io: Io, signal?: AbortSignal): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      "after-seq": { type: "string" },
      type: { type: "string", multiple: true },
      node: { type: "string" },
      follow: { type: "boolean", short: "f" },
      json: { type: "boolean" },
      db: { type: "string" },
    },
  });
  const runId = positionals[0];
  if (!runId || positionals.length > 1) throw usageError("events takes exactly one run id");
  const afterSeq = nonNegativeNumber(values["after-seq"], "--after-seq", true);
  const types = values.type?.flatMap((t) => t.split(",")).filter((t) => t !== "");
  for (const t of types ?? []) {
    if (!(EVENT_TYPES as readonly string[]).includes(t)) throw usageError(`--type "${t}" is not an event type (${EVENT_TYPES.join(", ")})`);
  }
  const filter: Filter = { runId, ...(types ? { types } : {}), ...(values.node === undefined ? {} : { nodeId: values.node }) };
  const db = openExistingDb(values.db);
  try {
    if (!(await runs.getRun(db, runId))) {
      // A run queued for workers (up --detach) has no events yet: --follow waits for a worker to start it.
      if (!(values.follow && (await queue.getRequest(db, runId)))) throw new SmithersError("RUN_NOT_FOUND", `No run "${runId}" in ${db.path}`, { runId });
      while (!(await runs.getRun(db, runId))) {
        if (signal?.aborted) return EXIT.cancelled;
        if (!(await queue.getRequest(db, runId)) && !(await runs.getRun(db, runId))) {
          throw new SmithersError("RUN_NOT_FOUND", `Run "${runId}" left the queue without starting (a worker could not start it)`, { runId });
        }
        await Bun.sleep(FOLLOW_POLL_MS);
      }
    }
    let last = await printAfter(db, filter, afterSeq, values.json === true, io);
    if (!values.follow) return EXIT.ok;
    while (!signal?.aborted) {
      // The status is read before the events: a run ends in the same transaction as its last
      // event, so once it reads ended, one more read of the events gets them all.
      const over = isOver((await runs.getRun(db, runId))?.status ?? "finished");
      last = await printAfter(db, filter, last, values.json === true, io);
      if (over) return EXIT.ok;
      await Bun.sleep(FOLLOW_POLL_MS);
    }
    return EXIT.cancelled;
  } finally {
    await db.close();
  }
}
