/**
 * Figures of the database for the soak's report, beside the invariants: how runs ended, how long
 * they took, where they paused, and how long a waiting run took to wake once it could go on.
 */
import type { Store } from "./store.ts";

/** Figures of the database for the report: runs by status, failures by code, retries, abandoned attempts. */
export async function dbFigures(store: Store): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const r of await store.all<{ status: string; n: number }>("SELECT status, count(*) AS n FROM _smithers_runs GROUP BY status"))
    out[`runs ${r.status}`] = Number(r.n);
  for (const r of await store.all<{ error_json: string | null }>("SELECT error_json FROM _smithers_runs WHERE status = 'failed'")) {
    const code = (JSON.parse(r.error_json ?? "{}") as { code?: string }).code ?? "unknown";
    out[`failed: ${code}`] = (out[`failed: ${code}`] ?? 0) + 1;
  }
  for (const r of await store.all<{ state: string; n: number }>("SELECT state, count(*) AS n FROM _smithers_attempts GROUP BY state"))
    out[`attempts ${r.state}`] = Number(r.n);
  const took = (await store.all<{ ms: number }>("SELECT finished_at_ms - created_at_ms AS ms FROM _smithers_runs WHERE finished_at_ms IS NOT NULL"))
    .map((r) => Number(r.ms))
    .sort((a, b) => a - b);
  const at = (q: number) => (took.length === 0 ? 0 : took[Math.min(took.length - 1, Math.floor(q * took.length))]! / 1000);
  out["run duration median, s"] = at(0.5);
  out["run duration p95, s"] = at(0.95);
  out["run duration max, s"] = at(1);
  const retries = await store.all<{ n: number }>("SELECT count(*) AS n FROM _smithers_events WHERE type = 'NodeRetrying'");
  out["retries (NodeRetrying events)"] = Number(retries[0]?.n ?? 0);
  return out;
}

/** Events after which a run pauses by design: it waits for a person, a signal, a time or a retry's backoff. */
const WAIT_EVENTS = new Set(["RunWaiting", "TimerScheduled", "SignalWaiting", "ApprovalRequested", "NodeRetrying"]);

/**
 * The longest pauses between two consecutive events of a run that were not waits by design: a
 * process killed with the run in hand (until another takes it over), or a step that stalled.
 */
export async function longestPauses(store: Store, n: number): Promise<string[]> {
  const events = await store.all<{ run_id: string; seq: number; timestamp_ms: number; type: string }>(
    "SELECT run_id, seq, timestamp_ms, type FROM _smithers_events ORDER BY run_id, seq",
  );
  const gaps: { ms: number; text: string }[] = [];
  for (let i = 1; i < events.length; i++) {
    const a = events[i - 1]!;
    const b = events[i]!;
    if (a.run_id !== b.run_id || WAIT_EVENTS.has(a.type)) continue;
    const ms = Number(b.timestamp_ms) - Number(a.timestamp_ms);
    gaps.push({ ms, text: `${a.run_id}: ${(ms / 1000).toFixed(1)} s from ${a.type} (seq ${a.seq}) to ${b.type}` });
  }
  return gaps
    .sort((x, y) => y.ms - x.ms)
    .slice(0, n)
    .map((g) => g.text);
}

const quantile = (sorted: number[], q: number) => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!);

/**
 * From when a waiting run could go on to when a process resumed it: a decision's or a signal's
 * arrival (or the run's stop to wait, when it came first) to the next RunResumed; a timer's
 * lateness as it recorded it. The daemons' pass interval is 0.5 s (supervise) and 0.25 s (workers).
 */
export async function wakeLatencies(store: Store): Promise<{ figures: Record<string, number>; worst: string[] }> {
  const events = await store.all<{ run_id: string; timestamp_ms: number; type: string; payload_json: string }>(
    "SELECT run_id, timestamp_ms, type, payload_json FROM _smithers_events WHERE type IN ('RunWaiting', 'RunResumed', 'TimerFired') ORDER BY run_id, seq",
  );
  const answers = await store.all<{ run_id: string; at: number; what: string }>(
    "SELECT run_id, decided_at_ms AS at, 'decision' AS what FROM _smithers_approvals WHERE decided_at_ms IS NOT NULL UNION ALL SELECT run_id, received_at_ms AS at, 'signal' AS what FROM _smithers_signals WHERE consumed_by_node_id IS NOT NULL",
  );
  const byRun = Map.groupBy(events, (e) => e.run_id);
  const woken: { ms: number; text: string }[] = [];
  for (const a of answers) {
    let waitingSince: number | undefined;
    for (const e of byRun.get(a.run_id) ?? []) {
      if (e.type === "RunWaiting") waitingSince = Number(e.timestamp_ms);
      else if (e.type === "RunResumed" && waitingSince !== undefined && Number(e.timestamp_ms) >= Number(a.at)) {
        const ms = Number(e.timestamp_ms) - Math.max(Number(a.at), waitingSince);
        woken.push({ ms, text: `${a.run_id}: woken ${(ms / 1000).toFixed(1)} s after its ${a.what}` });
        break;
      }
    }
  }
  const timers = events
    .filter((e) => e.type === "TimerFired")
    .map((e) => {
      const ms = Number((JSON.parse(e.payload_json) as { firedLateMs?: number }).firedLateMs ?? 0);
      return { ms, text: `${e.run_id}: timer fired ${(ms / 1000).toFixed(1)} s late` };
    });
  const sorted = (list: { ms: number }[]) => list.map((w) => w.ms).sort((x, y) => x - y);
  const [w, t] = [sorted(woken), sorted(timers)];
  return {
    figures: {
      "wake after a decision or signal: count": w.length,
      "  median, s": quantile(w, 0.5) / 1000,
      "  max, s": quantile(w, 1) / 1000,
      "timers fired: count": t.length,
      "  late by, median, s": quantile(t, 0.5) / 1000,
      "  late by, max, s": quantile(t, 1) / 1000,
    },
    worst: [...woken, ...timers]
      .sort((x, y) => y.ms - x.ms)
      .slice(0, 3)
      .map((x) => x.text),
  };
}
