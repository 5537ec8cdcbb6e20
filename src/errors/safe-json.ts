/**
 * The one serializer for values Smithers did not make: thrown values, error details, task meta.
 * It never throws and its output is bounded, whatever it is given (BigInt, cycles, getters that
 * throw, a 10 MB string, a 500-level nesting), because what it serializes is written inside a
 * step's transaction, and a value that cannot be written there must not stop the run.
 */
import { nextStack, type StackCount } from "./stack.ts";

/**
 * The bounds, stated: nesting deeper than `depth` becomes "[Depth limit]", a string longer than
 * `stringChars` is cut with a note of how much was left out, arrays keep their first
 * `arrayItems` items and objects their first `objectKeys` keys, and one serialized value stays
 * within `totalChars` characters of JSON text.
 */
export const SAFE_JSON_LIMITS = { depth: 8, stringChars: 2_000, arrayItems: 50, objectKeys: 50, totalChars: 16_384 } as const;

export type SafeJsonLimits = { depth: number; stringChars: number; arrayItems: number; objectKeys: number; totalChars: number };

/** `stacks`: set by errorToJson only: each Error walked keeps its author's stack frames (stack.ts), counted here. */
type Walk = { limits: SafeJsonLimits; seen: Set<object>; budget: number; stacks: StackCount | undefined };

/** Cuts a string to `max` characters, saying how many were left out. */
export function capString(text: string, max: number = SAFE_JSON_LIMITS.stringChars): string {
  return text.length <= max ? text : `${text.slice(0, max)}… [${text.length - max} more chars]`;
}

/** Reads a property that may be a throwing getter or sit on a revoked Proxy. */
function read(target: object, key: string): unknown {
  try {
    return (target as Record<string, unknown>)[key];
  } catch {
    return "[Unreadable]";
  }
}

function keysOf(value: object): string[] {
  try {
    return Object.keys(value);
  } catch {
    return [];
  }
}

/**
 * An Error as plain fields: name, message, a string `code` if it has one, the rest of its own
 * fields, its author's stack frames when the walk keeps stacks, and its cause.
 */
function errorFields(error: Error, stacks: StackCount | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = { name: read(error, "name"), message: read(error, "message") };
  const code = read(error, "code");
  if (typeof code === "string" || typeof code === "number") out.code = code;
  for (const key of keysOf(error)) {
    if (key in out || key === "stack" || key === "cause") continue;
    const value = read(error, key);
    // A SmithersError's details are its fields; their `cause` is the error's cause, added below.
    if (key === "details" && typeof value === "object" && value !== null) {
      for (const k of keysOf(value)) if (k !== "cause" && !(k in out)) out[k] = read(value, k);
    } else out[key] = value;
  }
  const stack = stacks ? nextStack(stacks, read(error, "stack")) : undefined;
  if (stack) out.stack = stack;
  const cause = read(error, "cause");
  if (cause !== undefined) out.cause = cause;
  return out;
}

function walk(value: unknown, depth: number, w: Walk): unknown {
  if (w.budget <= 0) return "[Truncated]";
  switch (typeof value) {
    case "string": {
      const text = capString(value, Math.min(w.limits.stringChars, Math.max(16, w.budget)));
      w.budget -= text.length + 2;
      return text;
    }
    case "number":
      w.budget -= 8;
      return Number.isFinite(value) ? value : String(value);
    case "boolean":
      w.budget -= 5;
      return value;
    case "bigint":
      w.budget -= 8;
      return `${value}n`;
    case "undefined":
      return undefined;
    case "symbol":
    case "function":
      w.budget -= 12;
      return `[${typeof value}]`;
  }
  if (value === null) return null;
  const object = value as object;
  if (w.seen.has(object)) return "[Circular]";
  if (depth >= w.limits.depth) return "[Depth limit]";
  w.seen.add(object);
  try {
    if (object instanceof Date) return Number.isNaN(object.getTime()) ? "Invalid Date" : object.toISOString();
    if (Array.isArray(object)) {
      const out: unknown[] = [];
      const length = Number(read(object, "length")) || 0;
      for (let i = 0; i < Math.min(length, w.limits.arrayItems) && w.budget > 0; i++) out.push(walk(read(object, String(i)), depth + 1, w) ?? null);
      if (length > out.length) out.push(`[${length - out.length} more items]`);
      return out;
    }
    const source = object instanceof Error ? errorFields(object, w.stacks) : object;
    const out: Record<string, unknown> = {};
    const keys = keysOf(source);
    let kept = 0;
    for (const key of keys) {
      if (kept >= w.limits.objectKeys || w.budget <= 0) break;
      const item = walk(read(source, key), depth + 1, w);
      if (item === undefined) continue;
      out[capString(key, 200)] = item;
      w.budget -= key.length + 4;
      kept++;
    }
    if (keys.length > kept && w.budget > 0) out["…"] = `${keys.length - kept} more keys`;
    return out;
  } catch {
    // A revoked Proxy, or a Proxy whose traps throw: even asking what it is fails.
    return "[Uninspectable]";
  } finally {
    w.seen.delete(object);
  }
}

/**
 * A JSON-safe, bounded copy of `value` (see SAFE_JSON_LIMITS): BigInt becomes `"12n"`, a cycle
 * `"[Circular]"`, an Error its fields, a Date its ISO text; `undefined` fields are left out.
 * With `stacks` (errorToJson), each Error also keeps its author's stack frames, counted there.
 */
export function toSafeJson(value: unknown, limits: SafeJsonLimits = SAFE_JSON_LIMITS, stacks?: StackCount): unknown {
  return walk(value, 0, { limits, seen: new Set(), budget: limits.totalChars, stacks });
}

/** `JSON.stringify` that never throws and stays within `limits.totalChars` (falls back to `fallback`'s text). */
export function safeStringify(value: unknown, limits: SafeJsonLimits = SAFE_JSON_LIMITS, fallback: () => unknown = () => "[Unserializable]"): string {
  const text = JSON.stringify(toSafeJson(value, limits)) ?? "null";
  if (text.length <= limits.totalChars) return text;
  // Escaping can grow a string up to six times, so the budget can be overrun: try the fallback,
  // then keep the head of the text (re-escaping at most doubles it).
  const second = JSON.stringify(toSafeJson(fallback(), { ...limits, stringChars: Math.floor(limits.totalChars / 8) })) ?? "null";
  if (second.length <= limits.totalChars) return second;
  return JSON.stringify({ truncated: true, head: text.slice(0, Math.floor(limits.totalChars / 4)) });
}
