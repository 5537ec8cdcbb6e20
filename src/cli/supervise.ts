/** `smithers supervise`: resume runs whose owner died (stale heartbeat) and start due cron slots, one pass or --watch. */
import { parseArgs } from "./parse-args.ts";
import { supervise, superviseForever, type SuperviseOutcome } from "../engine/daemon/index.ts";
import { createLogger, type LogFields, logFormatOption, type Logger } from "./log.ts";
import { metricsPortFlag, startMetrics } from "./metrics.ts";
import { durabilityFlag, durationFlag, EXIT, nonNegativeMs, openExistingDb, positiveInt, usageError, type Io } from "./shared.ts";

/** One line for an outcome of a pass (the worker prints the same lines for the same outcomes). */
export function describeOutcome(o: SuperviseOutcome): string {
  if (o.action === "cron-started")
    return `cron ${o.cronId} started ${o.runId}${o.result ? ` ${o.result.status}${o.result.error ? ` ${o.result.error.code}` : ""}` : ""}`;
  if (o.action === "cron-skipped") return `cron ${o.cronId} skipped ${o.count} missed slot${o.count === 1 ? "" : "s"}`;
  if (o.action === "cron-failed") return `cron ${o.cronId} failed: ${o.reason}`;
  if (o.action === "cron-lost") return `cron ${o.cronId} lost ${o.runId}: another supervisor or worker claimed this slot`;
  if (o.action === "resumed") return `resumed ${o.runId} ${o.result.status}${o.result.error ? ` ${o.result.error.code}` : ""}`;
  return `${o.action} ${o.runId}: ${o.reason}`;
}

/**
 * An outcome's line on stdout (`text`: how it reads, describeOutcome's or the worker's): level error
 * with the error's code for a run that failed or a cron slot that could not start, warn for one
 * handed back or dropped, info otherwise.
 */
export function logOutcome(
  log: Logger,
  o: { action: string; runId?: string; cronId?: string; result?: { status: string; error?: { code: string } | null } },
  text: string,
): void {
  const error = o.result?.error;
  const level =
    error || o.action === "cron-failed" || o.result?.status === "failed" ? "error" : ["dropped", "returned", "lost"].includes(o.action) ? "warn" : "info";
  const fields: LogFields = { outcome: o.action };
  if (o.runId) fields.runId = o.runId;
  if (o.cronId) fields.cronId = o.cronId;
  if (error) fields.code = error.code;
  log.out(level, text, fields);
}

/**
 * Pause between `--watch` passes. A pass is a handful of indexed look-ups (milliseconds with
 * 10,000 waiting runs, see bench/daemon), so a short pause costs little and keeps the time from
 * an answer or signal to the resumed run low.
 */
export const DEFAULT_WATCH_INTERVAL_MS = 1_000;

export async function superviseCommand(args: string[], io: Io, signal: AbortSignal): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      db: { type: "string" },
      "stale-after-ms": { type: "string" },
      watch: { type: "boolean" },
      "interval-ms": { type: "string" },
      // smithers-orchestrator's names: durations with a unit ("30s", "1m"); --interval implies --watch.
      interval: { type: "string" },
      "stale-threshold": { type: "string" },
      durability: { type: "string" },
      "log-format": { type: "string" },
      "metrics-port": { type: "string" },
    },
  });
  const log = createLogger(io, logFormatOption(values["log-format"]));
  const metricsPort = metricsPortFlag(values["metrics-port"]);
  if (values.interval !== undefined && values["interval-ms"] !== undefined) throw usageError("pass --interval or --interval-ms, not both");
  if (values["stale-threshold"] !== undefined && values["stale-after-ms"] !== undefined)
    throw usageError("pass --stale-threshold or --stale-after-ms, not both");
  const interval = durationFlag(values.interval, "--interval");
  if (interval === 0) throw usageError("--interval must be more than 0");
  const watching = values.watch || interval !== undefined;
  if (metricsPort !== undefined && !watching) throw usageError("--metrics-port serves metrics while supervise watches: pass --watch (or --interval) with it");
  const durability = durabilityFlag(values.durability);
  const db = openExistingDb(values.db);
  if (durability) await db.setDurability(durability);
  const staleAfterMs = durationFlag(values["stale-threshold"], "--stale-threshold") ?? nonNegativeMs(values["stale-after-ms"], "--stale-after-ms");
  // Counters of the runs this process resumes, for as long as it watches.
  const metrics = metricsPort === undefined ? undefined : await startMetrics(db, metricsPort, log, "supervise");
  const onEvent = (event: Parameters<Logger["event"]>[0]) => {
    metrics?.observe(event);
    log.event(event, true);
  };
  if (watching) {
    const intervalMs = interval ?? positiveInt(values["interval-ms"], "--interval-ms") ?? DEFAULT_WATCH_INTERVAL_MS;
    log.out("info", `watching ${db.path} every ${intervalMs} ms (Ctrl-C to stop)`);
    try {
      await superviseForever({ db, staleAfterMs, intervalMs, signal, onEvent, durability, onOutcome: (o) => logOutcome(log, o, describeOutcome(o)) });
    } finally {
      await metrics?.stop();
    }
    return EXIT.ok;
  }
  const outcomes = await supervise({ db, staleAfterMs, onEvent, durability });
  for (const o of outcomes) logOutcome(log, o, describeOutcome(o));
  if (outcomes.length === 0) log.out("info", "no stale runs, no due waits, no due cron slots");
  const failed = (o: SuperviseOutcome) =>
    o.action === "cron-failed" || ((o.action === "resumed" || o.action === "cron-started") && o.result?.status === "failed");
  return outcomes.some(failed) ? EXIT.failed : EXIT.ok;
}
