import type { z } from "zod";
import { zod } from "./zod.ts";

// Zod internals (`_zod.def`, check definitions) are read only here, so a Zod upgrade touches one file.

export type Schema = z.core.$ZodType;
export type Def = Record<string, unknown> & { type: string; checks?: readonly { _zod: { def: unknown } }[] };

/** What wrappers (optional, nullable, default, pipe, lazy…) said about the schema they wrap. */
export type Unwrapped = { core: Schema; nullable: boolean; optional: boolean; description?: string; defaultValue?: { value: unknown } };

/**
 * Which side of a transformation is wanted: `input` is what a value must look like to parse (an
 * agent's reply), `output` what parsing produces (a stored column).
 */
export type UnwrapSide = "input" | "output";

export const def = (schema: Schema): Def => schema._zod.def as unknown as Def;

/**
 * Whether a schema checks its values itself, beyond its type: a format such as `z.email()`,
 * `z.int()` or `z.iso.datetime()` is a string or number schema that is also its own check
 * (its `def.checks` stays empty).
 */
export const checksItself = (schema: Schema): boolean => schema._zod.traits.has("$ZodCheck");

/** Whether a value is a Zod (v4) schema at all: what a caller passed where a schema belongs. */
export const isZodSchema = (value: unknown): value is Schema => typeof value === "object" && value !== null && "_zod" in value;

/** Looks through wrappers to the schema they wrap, collecting what they said on the way. */
export function unwrap(schema: Schema, side: UnwrapSide = "input"): Unwrapped {
  const out: Unwrapped = { core: schema, nullable: false, optional: false };
  let current = schema;
  for (;;) {
    out.description ??= zod().globalRegistry.get(current)?.description;
    const d = def(current);
    let next: unknown;
    switch (d.type) {
      case "success":
        // z.success parses its inner schema but produces a boolean.
        if (side === "output") {
          out.core = current;
          return out;
        }
        next = d.innerType;
        break;
      case "nullable":
      case "optional":
      case "nonoptional":
      case "readonly":
      case "catch":
        if (d.type === "nullable") out.nullable = true;
        if (d.type === "optional") out.optional = true;
        next = d.innerType;
        break;
      case "default":
      case "prefault":
        out.defaultValue ??= stableDefault(d);
        next = d.innerType;
        break;
      case "lazy":
        // The cached inner schema keeps identity across calls, which the recursion check needs.
        next = (current._zod as { innerType?: Schema }).innerType ?? (d.getter as () => Schema)();
        break;
      case "pipe": {
        // Each side is the schema on that side, unless it is a bare transform (z.preprocess on
        // the input side, .transform() on the output side): then only the other side says anything.
        const [wanted, other] = side === "input" ? [d.in, d.out] : [d.out, d.in];
        next = def(wanted as Schema).type === "transform" ? other : wanted;
        break;
      }
      default:
        out.core = current;
        return out;
    }
    current = next as Schema;
  }
}

// A default comes from a getter that may call a factory (ids, timestamps); such defaults are
// left out so the description stays the same from one call to the next.
function stableDefault(d: Def): { value: unknown } | undefined {
  try {
    const first = JSON.stringify(d.defaultValue);
    return first !== undefined && first === JSON.stringify(d.defaultValue) ? { value: JSON.parse(first) } : undefined;
  } catch {
    return undefined;
  }
}

/** Check definitions; format schemas such as z.email() or z.int() are themselves a check. */
export function checks(d: Def): Record<string, unknown>[] {
  const own = typeof d.check === "string" ? [d] : [];
  return [...own, ...(d.checks ?? []).map((c) => c._zod.def as Record<string, unknown>)];
}

/** Values of an enum; drops the reverse-mapping keys TypeScript adds to numeric enums. */
export function enumValues(entries: Record<string, unknown>): unknown[] {
  const numeric = new Set(
    Object.values(entries)
      .filter((v) => typeof v === "number")
      .map(String),
  );
  return Object.entries(entries)
    .filter(([key]) => !numeric.has(key))
    .map(([, value]) => value);
}

/** Whether an object field may be left out of the input (optional, or with a default). */
export const optionalInput = (schema: Schema): boolean => schema._zod.optin !== undefined;

/** The regular expression a z.templateLiteral matches. */
export const templatePattern = (schema: Schema): unknown => (schema._zod as { pattern?: unknown }).pattern;
