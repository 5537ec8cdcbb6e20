/**
 * Limits on scarce things shared by every run of a database: per key, how many tasks may run at
 * once (`concurrency`) and how many requests and agent tokens may start per sliding minute. Declared
 * once (createSmithers `limits`), overridden per process (`--limit`); checked here, loudly: an
 * unknown option or a limit that is not a whole number > 0 is INVALID_LIMIT, never "unlimited".
 */
import { SmithersError } from "../../errors/index.ts";

/** What one key allows. At least one field; each a whole number > 0. */
export type LimitSpec = {
  /** Tasks holding the key at once, across every process sharing the database. */
  concurrency?: number;
  /** Task starts per sliding minute. */
  perMinute?: number;
  /** Agent tokens (input + output) per sliding minute, counted when an attempt reports them. */
  tokensPerMinute?: number;
};

export type Limits = Readonly<Record<string, LimitSpec>>;

export const LIMIT_OPTIONS = ["concurrency", "perMinute", "tokensPerMinute"] as const satisfies readonly (keyof LimitSpec)[];
type LimitOption = (typeof LIMIT_OPTIONS)[number];

/** The sliding window of `perMinute` and `tokensPerMinute`. */
export const RATE_WINDOW_MS = 60_000;

const invalid = (message: string, details: Record<string, unknown>) => new SmithersError("INVALID_LIMIT", message, details);

function checkValue(key: string, option: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value <= 0) {
    throw invalid(`limits.${key}.${option} must be a whole number > 0, got ${JSON.stringify(value) ?? String(value)}`, { key, option });
  }
  return value;
}

/** The limits, checked: INVALID_LIMIT for a key that is empty, an unknown option, or a bad value. */
export function checkLimits(limits: unknown): Limits {
  if (limits === undefined) return {};
  if (typeof limits !== "object" || limits === null || Array.isArray(limits)) {
    throw invalid(`limits must be an object of keys, like { anthropic: { concurrency: 2 } }`, {});
  }
  const out: Record<string, LimitSpec> = {};
  for (const [key, spec] of Object.entries(limits)) {
    if (key === "") throw invalid("A limit's key must not be empty", { key });
    if (typeof spec !== "object" || spec === null || Array.isArray(spec)) {
      throw invalid(`limits.${key} must be an object like { concurrency: 2 }, got ${JSON.stringify(spec) ?? String(spec)}`, { key });
    }
    const checked: LimitSpec = {};
    for (const [option, value] of Object.entries(spec)) {
      if (!(LIMIT_OPTIONS as readonly string[]).includes(option)) {
        throw invalid(`limits.${key} has an unknown option "${option}" (known: ${LIMIT_OPTIONS.join(", ")})`, { key, option });
      }
      if (value === undefined) continue;
      checked[option as LimitOption] = checkValue(key, option, value);
    }
    if (Object.keys(checked).length === 0) throw invalid(`limits.${key} sets no limit (give ${LIMIT_OPTIONS.join(", ")})`, { key });
    out[key] = checked;
  }
  return out;
}

/**
 * One `--limit` flag: `KEY=N` (concurrency), or `KEY.OPTION=N` for any option. What follows the
 * last dot must name an option (a typo is INVALID_LIMIT, not a new key), so a key given by
 * `--limit` holds no dot; colons are fine (`tenant:acme=1`).
 */
export function parseLimitFlag(text: string): Limits {
  const eq = text.lastIndexOf("=");
  if (eq <= 0) throw invalid(`--limit takes KEY=N or KEY.OPTION=N (like anthropic=2 or anthropic.perMinute=50), got "${text}"`, { flag: text });
  const left = text.slice(0, eq);
  const raw = text.slice(eq + 1);
  const dot = left.lastIndexOf(".");
  const suffix = dot >= 0 ? left.slice(dot + 1) : undefined;
  if (suffix !== undefined && !(LIMIT_OPTIONS as readonly string[]).includes(suffix)) {
    throw invalid(`--limit ${text}: unknown option "${suffix}" (known: ${LIMIT_OPTIONS.join(", ")})`, { flag: text, option: suffix });
  }
  const key = dot >= 0 ? left.slice(0, dot) : left;
  const option: LimitOption = (suffix as LimitOption | undefined) ?? "concurrency";
  if (!/^\d+$/.test(raw)) throw invalid(`--limit ${text}: ${option} must be a whole number > 0`, { flag: text, key, option });
  return checkLimits({ [key]: { [option]: Number(raw) } });
}

/** `base` with `over` on top, option by option (a flag's concurrency leaves the declared perMinute alone). */
export function mergeLimits(base: Limits, over: Limits): Limits {
  const out: Record<string, LimitSpec> = { ...base };
  for (const [key, spec] of Object.entries(over)) out[key] = { ...out[key], ...spec };
  return out;
}

/**
 * The limit a task's key falls under: its own entry, else the entry of its prefix before the
 * first ":" (`tenant:acme` under `limits.tenant`, one set of slots per tenant). Undefined: none.
 */
export function limitFor(limits: Limits, key: string): LimitSpec | undefined {
  const own = limits[key];
  if (own) return own;
  const colon = key.indexOf(":");
  return colon > 0 ? limits[key.slice(0, colon)] : undefined;
}
