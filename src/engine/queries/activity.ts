/** The runs list's runs-over-time chart: runs started, finished and failed per minute, and spend per day. */
import type { RunActivity } from "../../contract/index.ts";
import { activity, type SmithersDb } from "../../db/index.ts";

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

/** Counts per minute from run times: pure; the minutes run from the one holding `nowMs - minutes + 1` to `nowMs`'s. */
export function bucketRunTimes(rows: readonly activity.RunTimesRow[], nowMs: number, minutes: number): RunActivity["perMinute"] {
  const last = Math.floor(nowMs / MINUTE_MS) * MINUTE_MS;
  const first = last - (minutes - 1) * MINUTE_MS;
  const perMinute = Array.from({ length: minutes }, (_, i) => ({ minuteMs: first + i * MINUTE_MS, started: 0, finished: 0, failed: 0 }));
  const slot = (ms: number | null) => (ms === null || ms < first ? undefined : perMinute[Math.floor((ms - first) / MINUTE_MS)]);
  for (const r of rows) {
    const started = slot(r.startedAtMs);
    if (started) started.started += 1;
    const ended = r.status === "finished" || r.status === "failed" ? slot(r.finishedAtMs) : undefined;
    if (ended && r.status === "finished") ended.finished += 1;
    if (ended && r.status === "failed") ended.failed += 1;
  }
  return perMinute;
}

export async function runActivity(db: SmithersDb, o: { minutes: number; days: number; nowMs?: number }): Promise<RunActivity> {
  const nowMs = o.nowMs ?? Date.now();
  const firstMinute = (Math.floor(nowMs / MINUTE_MS) - (o.minutes - 1)) * MINUTE_MS;
  const firstDay = (Math.floor(nowMs / DAY_MS) - (o.days - 1)) * DAY_MS;
  const [times, spend] = await Promise.all([activity.runTimesSince(db, firstMinute), activity.spendPerDaySince(db, firstDay)]);
  return { perMinute: bucketRunTimes(times, nowMs, o.minutes), spendPerDay: spend.filter((d) => d.dayMs >= firstDay) };
}
