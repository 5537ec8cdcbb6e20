/**
 * One of each for the whole tree: canonical JSON (the same text for equal values, whatever their
 * key order), SHA-256 digests, and the plain-object check. No imports, so every folder may use it.
 */

/** A plain object: `{…}` or `Object.create(null)`, not an array, class instance or other exotic object. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** A value canonicalJson's strict mode refuses: `path` says where it is (`$.a[2].b`), `what` what it is. */
export class UnstableJsonError extends Error {
  constructor(
    readonly path: string,
    readonly what: string,
  ) {
    super(`${what} at ${path} has no stable JSON form`);
    this.name = "UnstableJsonError";
  }
}

/**
 * The one JSON text of a value, object keys sorted and properties set to undefined left out.
 *
 * - `strict` (default): a value without exactly one JSON form (undefined, a function, a symbol, a
 *   BigInt, NaN or ±Infinity, a Map, Set or other class instance, a cycle) throws
 *   UnstableJsonError instead of collapsing to a text another value also has; `toJSON` (a Date) is
 *   honoured. What cache keys use.
 * - `loose`: such values read as JSON.stringify reads them inside an array (`null`), a Date as its
 *   ISO text, another class instance by its own enumerable fields. What stored digests of inputs
 *   and definitions use: its texts must never change, or stored runs would look changed.
 * @example canonicalJson({ b: 1, a: [true, "x"] }) // '{"a":[true,"x"],"b":1}'
 */
export function canonicalJson(value: unknown, mode: "strict" | "loose" = "strict"): string {
  const strict = mode === "strict";
  const open = new Set<object>();
  const walk = (v: unknown, path: string): string => {
    if (v === null) return "null";
    switch (typeof v) {
      case "string":
        return JSON.stringify(v);
      case "boolean":
        return v ? "true" : "false";
      case "number":
        if (!Number.isFinite(v) && strict) throw new UnstableJsonError(path, String(v));
        return JSON.stringify(v);
      case "object":
        break;
      case "bigint":
        throw new UnstableJsonError(path, "a bigint");
      default:
        if (strict) throw new UnstableJsonError(path, typeof v === "undefined" ? "undefined" : `a ${typeof v}`);
        return "null";
    }
    if (!strict && v instanceof Date) return JSON.stringify(v);
    const obj = v as object;
    if (open.has(obj)) throw new UnstableJsonError(path, "a cycle");
    open.add(obj);
    try {
      if (Array.isArray(obj)) return `[${obj.map((item, i) => walk(item, `${path}[${i}]`)).join(",")}]`;
      if (strict) {
        const toJSON = (obj as { toJSON?: unknown }).toJSON;
        if (typeof toJSON === "function") return walk(toJSON.call(obj), path);
        if (!isPlainObject(obj)) throw new UnstableJsonError(path, `a ${obj.constructor?.name ?? "non-plain object"}`);
      }
      const keys = Object.keys(obj).sort();
      const parts: string[] = [];
      for (const k of keys) {
        const item = (obj as Record<string, unknown>)[k];
        if (item !== undefined) parts.push(`${JSON.stringify(k)}:${walk(item, `${path}.${k}`)}`);
      }
      return `{${parts.join(",")}}`;
    } finally {
      open.delete(obj);
    }
  };
  return walk(value, "$");
}

/** SHA-256 of a text or bytes, as 64 hex digits (Bun's native hasher: node:crypto costs ~20 ms to load). */
export function sha256Hex(data: string | Uint8Array): string {
  return new Bun.CryptoHasher("sha256").update(data).digest("hex");
}

/** SHA-256 of a value's loose canonical JSON: a digest equal values share. */
export function hashJson(value: unknown): string {
  return sha256Hex(canonicalJson(value, "loose"));
}
