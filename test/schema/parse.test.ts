import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { safeParseWarming } from "../../src/schema/index.ts";

/** Values that probe a flat object schema: matches, extra keys, missing keys, wrong types, odd numbers, non-objects. */
const VALUES: unknown[] = [
  { s: "a", n: 1, b: true },
  { s: "a@b.co", n: 1e300, b: true },
  { s: "2026-11-27T00:00:00Z", n: 2.5, b: true },
  { b: false, n: -0.5, s: "", extra: [1], more: { x: 1 } },
  { s: "a", n: 1 },
  { s: "a", n: Number.NaN, b: true },
  { s: "a", n: Number.POSITIVE_INFINITY, b: true },
  { s: 1, n: 1, b: true },
  { s: "a", n: "1", b: true },
  { s: "a", n: 1, b: "true" },
  { s: undefined, n: 1, b: true },
  Object.assign(Object.create({ s: "inherited" }), { n: 2, b: false }),
  [],
  null,
  "text",
  42,
  undefined,
];

const SCHEMAS: Record<string, z.ZodType> = {
  "a plain object": z.object({ s: z.string(), n: z.number(), b: z.boolean() }),
  "an empty object": z.object({}),
  "an object with a refinement": z.object({ s: z.string(), n: z.number(), b: z.boolean() }).refine((v) => v.n > 0),
  "a strict object": z.strictObject({ s: z.string(), n: z.number(), b: z.boolean() }),
  "a loose object": z.looseObject({ s: z.string(), n: z.number(), b: z.boolean() }),
  "fields with checks": z.object({ s: z.string().min(1), n: z.number().int(), b: z.boolean() }),
  "fields of a format (a check of their own)": z.object({ s: z.email(), n: z.int(), b: z.boolean() }),
  "fields of other formats": z.object({ s: z.iso.datetime(), n: z.float32(), b: z.boolean() }),
  "coercing fields": z.object({ s: z.coerce.string(), n: z.coerce.number(), b: z.coerce.boolean() }),
  "optional and defaulted fields": z.object({ s: z.string().optional(), n: z.number().default(7), b: z.boolean().nullable() }),
  "a transformed object": z.object({ s: z.string(), n: z.number(), b: z.boolean() }).transform((v) => ({ ...v, seen: true })),
};

describe("safeParseWarming", () => {
  for (const [name, schema] of Object.entries(SCHEMAS)) {
    test(`gives what Zod gives for ${name}, whatever the value`, () => {
      for (const value of VALUES) {
        const ours = safeParseWarming(schema, value);
        const zods = schema.safeParse(value);
        expect(ours.success).toBe(zods.success);
        if (ours.success && zods.success) {
          expect(ours.data).toEqual(zods.data);
          expect(Object.keys(ours.data as object)).toEqual(Object.keys(zods.data as object));
        } else expect(ours.error?.issues).toEqual(zods.error?.issues);
      }
    });
  }

  test("parses a plain object of strings, numbers and booleans without calling Zod, into a new object without unknown keys", () => {
    const schema = z.object({ s: z.string(), n: z.number(), b: z.boolean() });
    let zodCalls = 0;
    const original = schema.safeParse.bind(schema);
    schema.safeParse = ((value: unknown, params?: object) => {
      zodCalls++;
      return original(value, params as never);
    }) as typeof schema.safeParse;
    const input = { b: true, n: 3, s: "x", extra: 1 };
    const parsed = safeParseWarming(schema, input);
    expect(parsed).toEqual({ success: true, data: { s: "x", n: 3, b: true } });
    expect(parsed.data).not.toBe(input);
    expect(zodCalls).toBe(0);
    expect(safeParseWarming(schema, { ...input, n: "3" }).success).toBe(false);
    expect(zodCalls).toBe(1); // a value that does not match gets Zod's issues
  });
});
