/**
 * Parsing with a schema the way a run parses. The commonest output schema, a flat object of plain
 * strings, numbers and booleans, is checked here without Zod: Zod is loaded from node_modules as
 * source (a workflow's `z` and the engine's must be one module), so its first parse in a process
 * compiles its parsing code, ~0.7 ms, a tenth of a one-task run. Any other schema, and any value
 * that does not match (for Zod's issues), goes to Zod: the first few parses of each schema without
 * Zod's JIT, the rest with it. Zod compiles an object schema into a parser (`new Function`) at its
 * first parse, which costs a fresh process ~1-2 ms of CPU per schema; the compiled parser only pays
 * once a schema has parsed many values. The result is the same either way.
 */
import type { z } from "zod";
import { checksItself, def, type Schema } from "./walk.ts";

/** Parses of one schema done without the JIT before it is used. */
export const JITLESS_PARSES = 32;

const parsesOf = new WeakMap<object, number>();
const JITLESS = { jitless: true } as const;

/** `schema.safeParse(value)`, jitless for the schema's first JITLESS_PARSES parses in this process. */
export function safeParseWarming<T extends z.ZodType>(schema: T, value: unknown): z.ZodSafeParseResult<z.output<T>> {
  const plain = plainFields(schema);
  if (plain) {
    const data = parsePlain(plain, value);
    if (data) return { success: true, data: data as z.output<T> };
  }
  const n = parsesOf.get(schema) ?? 0;
  if (n >= JITLESS_PARSES) return schema.safeParse(value);
  parsesOf.set(schema, n + 1);
  return schema.safeParse(value, JITLESS);
}

type Primitive = "string" | "number" | "boolean";
type PlainField = readonly [key: string, type: Primitive];

/** A schema's fields when it is a plain object (see plainFields), else null; once per schema. */
const plainShapes = new WeakMap<object, readonly PlainField[] | null>();

/**
 * The fields of `z.object({ … })` whose fields are all `z.string()`, `z.number()` or `z.boolean()`
 * without checks, formats (`z.email()`, `z.int()`: their own check) or coercion, and which has no checks (refinements) or catch-all of its own; else
 * null. For such a schema Zod's output is a new plain object with the declared keys, in order,
 * each holding the input's value (its unknown keys stripped).
 */
function plainFields(schema: Schema): readonly PlainField[] | null {
  let fields = plainShapes.get(schema);
  if (fields === undefined) {
    fields = readPlainFields(schema);
    plainShapes.set(schema, fields);
  }
  return fields;
}

function readPlainFields(schema: Schema): readonly PlainField[] | null {
  const d = def(schema);
  if (d.type !== "object" || d.catchall !== undefined || (d.checks?.length ?? 0) > 0) return null;
  const shape = d.shape as Record<PropertyKey, unknown>;
  const fields: PlainField[] = [];
  for (const key of Reflect.ownKeys(shape)) {
    // A symbol key, and `__proto__` (which Zod's output leaves out), are Zod's to handle.
    if (typeof key !== "string" || key === "__proto__") return null;
    const field = Object.getOwnPropertyDescriptor(shape, key)?.value as Schema | undefined;
    if (!field?._zod) return null;
    const fd = def(field);
    if ((fd.type !== "string" && fd.type !== "number" && fd.type !== "boolean") || fd.coerce || (fd.checks?.length ?? 0) > 0 || checksItself(field))
      return null;
    fields.push([key, fd.type]);
  }
  return fields;
}

/** The parsed value as Zod makes it for a plain-object schema, or undefined when `value` does not match (Zod then says why). */
function parsePlain(fields: readonly PlainField[], value: unknown): Record<string, unknown> | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const input = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [key, type] of fields) {
    const v = input[key];
    // z.number() takes finite numbers only (no NaN, no Infinity).
    if (typeof v !== type || (type === "number" && !Number.isFinite(v))) return undefined;
    out[key] = v;
  }
  return out;
}
