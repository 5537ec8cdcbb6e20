/** Durations written as text ("30s", "5m"): `<Timer duration>` and the command's duration flags. Imports nothing. */

const DURATION_UNITS_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "30s" -> 30000; undefined for anything else than a non-negative number followed by ms, s, m, h or d. */
export function parseDuration(text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/.exec(text.trim());
  return match ? Math.round(Number(match[1]) * DURATION_UNITS_MS[match[2]!]!) : undefined;
}
