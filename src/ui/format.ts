/** How the pages write times, durations and usage. */
import type { Usage } from "./types.ts";

export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "–";
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m} min ${Math.round(s % 60)} s` : `${Math.floor(m / 60)} h ${m % 60} min`;
}

export const time = (ms: number | null | undefined): string => (ms === null || ms === undefined ? "–" : new Date(ms).toLocaleString());

export function usage(u: Usage | null | undefined): string {
  if (!u || (u.inputTokens === 0 && u.outputTokens === 0 && u.costUsd === null)) return "–";
  const tokens = `${u.inputTokens.toLocaleString()} in / ${u.outputTokens.toLocaleString()} out`;
  return u.costUsd === null ? tokens : `${tokens} · $${u.costUsd.toFixed(4)}`;
}

/** A run's duration: start to end, or to now while it has not ended. */
export function runDuration(r: { startedAtMs?: number | null; finishedAtMs?: number | null }, nowMs: number): number | null {
  if (r.startedAtMs === null || r.startedAtMs === undefined) return null;
  return (r.finishedAtMs ?? nowMs) - r.startedAtMs;
}
