/** zod() loads zod when first called: the very module a workflow's `import { z } from "zod"` gets. */
import { expect, test } from "bun:test";
import { z } from "zod";
import { approvalDecisionSchema, approvalRankingSchema, approvalSelectionSchema } from "../../src/jsx/components/approval.ts";
import { lazyEnum, lazyShape, zod } from "../../src/schema/zod.ts";

test("zod() is the zod an import gets, not a second copy (zod's CommonJS build)", () => {
  expect(zod()).toBe(z);
  // A schema built through it is one of the importer's classes.
  expect(zod().object({ a: zod().string() })).toBeInstanceOf(z.ZodObject);
});

test("lazyEnum builds its enum once, on first call", () => {
  const states = lazyEnum(["a", "b"] as const);
  expect(states()).toBe(states());
  expect(states().options).toEqual(["a", "b"]);
  expect(states().safeParse("c").success).toBe(false);
});

test("lazyShape makes each field when the object's shape is first read, once, in its order", () => {
  const made: string[] = [];
  const recorded =
    <T>(key: string, make: () => T) =>
    () => {
      made.push(key);
      return make();
    };
  const schema = z.object(
    lazyShape({
      a: recorded("a", () => z.string()),
      b: recorded("b", () => z.number().nullable()),
    }),
  );
  expect(made).toEqual([]);
  const field = schema.shape.a;
  expect(made).toEqual(["a", "b"]);
  expect(Object.keys(schema.shape)).toEqual(["a", "b"]);
  expect(schema.shape.a).toBe(field);
  // A schema made from it (extend, partial) reads the same fields, not new ones.
  expect(schema.extend({ c: z.boolean() }).shape.a).toBe(field);
  expect(schema.partial().safeParse({ b: null }).success).toBe(true);
  expect(made).toEqual(["a", "b"]);
  expect(schema.parse({ a: "x", b: null })).toEqual({ a: "x", b: null });
  expect(schema.safeParse({ a: 1, b: null }).success).toBe(false);
});

test("the approval schemas made on first read are the schemas they were: the same JSON Schema, fields and parses", () => {
  const eager = {
    decision: z.object({ approved: z.boolean(), note: z.string().nullable(), decidedBy: z.string().nullable(), decidedAt: z.string().nullable() }),
    selection: z.object({ selected: z.string(), notes: z.string().nullable() }),
    ranking: z.object({ ranked: z.array(z.string()), notes: z.string().nullable() }),
  };
  const lazy = { decision: approvalDecisionSchema, selection: approvalSelectionSchema, ranking: approvalRankingSchema };
  for (const name of ["decision", "selection", "ranking"] as const) {
    expect(lazy[name]).toBeInstanceOf(z.ZodObject);
    expect(z.toJSONSchema(lazy[name])).toEqual(z.toJSONSchema(eager[name]));
    expect(Object.keys(lazy[name].shape)).toEqual(Object.keys(eager[name].shape));
  }
  expect(approvalDecisionSchema.shape.approved).toBeInstanceOf(z.ZodBoolean);
  expect(approvalDecisionSchema.parse({ approved: true, note: null, decidedBy: "ann", decidedAt: null })).toEqual({
    approved: true,
    note: null,
    decidedBy: "ann",
    decidedAt: null,
  });
  expect(approvalRankingSchema.safeParse({ ranked: ["a", 1], notes: null }).success).toBe(false);
});
