/**
 * Cron schedules: a workflow file started on a cron pattern read in a time zone. Patterns are
 * parsed by croner; a schedule stores its next fire time so the daemon finds due ones by index.
 */
import { resolve } from "node:path";
import type { Cron } from "croner";
import { cron as cronRows, type SmithersDb } from "../../db/index.ts";
import { SmithersError } from "../../errors/index.ts";

export type CronSchedule = {
  cronId: string;
  schedule: string;
  /** IANA zone the pattern is read in ("UTC" when none was given). */
  timezone: string;
  workflowPath: string;
  input: unknown;
  enabled: boolean;
  createdAtMs: number;
  nextRunAtMs: number | null;
  lastRunAtMs: number | null;
  lastRunId: string | null;
  skippedSlots: number;
  /** `{ code, message }` of the latest fire that could not start its run; cleared by the next good one. */
  lastError: { code: string; message: string } | null;
};

export type AddCronOptions = {
  workflowPath: string;
  schedule: string;
  input?: unknown;
  timezone?: string;
  /** Default: the workflow file's name without its extension. */
  cronId?: string;
  now?: () => number;
};

/** A parsed pattern; an invalid pattern or time zone is INVALID_CRON. */
export function parseCron(schedule: string, timezone = "UTC"): Cron {
  // croner is loaded on the first pattern read (synchronously, as this is): a process that reads none, like `smithers up`, does not load it.
  const { Cron } = require("croner") as typeof import("croner");
  let pattern: Cron;
  try {
    pattern = new Cron(schedule, { timezone, paused: true });
    // croner checks the zone only when it computes a time.
    pattern.nextRun(new Date(0));
  } catch (cause) {
    throw new SmithersError("INVALID_CRON", `Invalid cron schedule "${schedule}" in time zone "${timezone}": ${(cause as Error).message}`, {
      schedule,
      timezone,
      cause,
    });
  }
  return pattern;
}

/** The first slot strictly after `afterMs`, or null when the pattern never fires again. */
export function nextCronSlot(pattern: Cron, afterMs: number): number | null {
  return pattern.nextRun(new Date(afterMs))?.getTime() ?? null;
}

function toSchedule(row: cronRows.CronRow): CronSchedule {
  return {
    cronId: row.cronId,
    schedule: row.pattern,
    timezone: row.timezone ?? "UTC",
    workflowPath: row.workflowPath,
    input: row.inputJson === null ? undefined : JSON.parse(row.inputJson),
    enabled: row.enabled,
    createdAtMs: row.createdAtMs,
    nextRunAtMs: row.nextRunAtMs,
    lastRunAtMs: row.lastRunAtMs,
    lastRunId: row.lastRunId,
    skippedSlots: row.skippedSlots,
    lastError: row.errorJson === null ? null : JSON.parse(row.errorJson),
  };
}

function defaultCronId(workflowPath: string): string {
  const base = workflowPath.split(/[\\/]/).pop() ?? workflowPath;
  return base.replace(/\.[^.]*$/, "") || base;
}

/**
 * Registers a schedule; its first fire is the first slot after now. Bad pattern or zone:
 * INVALID_CRON; input that is not JSON: INVALID_INPUT; id taken: CRON_EXISTS. Nothing is
 * written on any of them. The input is checked against the workflow's schema when it fires.
 * @example
 * await addCron(db, { workflowPath: "report.tsx", schedule: "0 9 * * 1-5", timezone: "Europe/Berlin" });
 */
export async function addCron(db: SmithersDb, o: AddCronOptions): Promise<CronSchedule> {
  const timezone = o.timezone ?? "UTC";
  const pattern = parseCron(o.schedule, timezone);
  const nowMs = (o.now ?? Date.now)();
  const nextRunAtMs = nextCronSlot(pattern, nowMs);
  if (nextRunAtMs === null) throw new SmithersError("INVALID_CRON", `Cron schedule "${o.schedule}" never fires after now`, { schedule: o.schedule });
  let inputJson: string | null = null;
  if (o.input !== undefined) {
    try {
      inputJson = JSON.stringify(o.input);
    } catch (cause) {
      throw new SmithersError("INVALID_INPUT", "Cron input must be JSON-serializable", { cause });
    }
  }
  const workflowPath = resolve(o.workflowPath);
  const cronId = o.cronId ?? defaultCronId(workflowPath);
  if (cronId.trim() === "") throw new SmithersError("INVALID_CRON", "A cron id must not be empty");
  const row = { cronId, pattern: o.schedule, timezone, workflowPath, inputJson, enabled: true, createdAtMs: nowMs, nextRunAtMs };
  if (!(await cronRows.insertCron(db, row))) {
    throw new SmithersError("CRON_EXISTS", `A cron schedule "${cronId}" already exists; remove it first or pass another id`, { cronId });
  }
  const stored = await cronRows.getCron(db, cronId);
  return toSchedule(stored!);
}

/** Every schedule, by id. */
export async function listCrons(db: SmithersDb): Promise<CronSchedule[]> {
  return (await cronRows.listCrons(db)).map(toSchedule);
}

/** Removes a schedule; an unknown id is CRON_NOT_FOUND. Runs it started are kept. */
export async function removeCron(db: SmithersDb, cronId: string): Promise<void> {
  if (!(await cronRows.deleteCron(db, cronId))) throw new SmithersError("CRON_NOT_FOUND", `No cron schedule "${cronId}" in ${db.path}`, { cronId });
}
