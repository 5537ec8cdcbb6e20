import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { describeSchema, extractJson } from "../../src/agents/index.ts";

const review = z.object({
  verdict: z.enum(["approve", "request-changes", "comment"]).describe("Overall decision"),
  summary: z.string().min(1).max(500),
  score: z.int().min(0).max(10),
  confidence: z.number().nullable(),
  reviewer: z.email().optional(),
  labels: z.array(z.string()).default([]),
  author: z.object({ login: z.string().describe("GitHub handle"), bot: z.boolean() }),
  findings: z.array(z.object({ file: z.string(), line: z.int().positive().optional(), severity: z.enum(["low", "high"]) })),
});

function lineFor(text: string, key: string): string {
  const line = text.split("\n").find((l) => l.trimStart().startsWith(`- "${key}"`));
  if (line === undefined) throw new Error(`no line for ${key}`);
  return line;
}

function exampleFrom(text: string): unknown {
  return extractJson(text.slice(text.indexOf("Example of the JSON shape")));
}

describe("describeSchema", () => {
  test("lists every top-level and nested field by name", () => {
    const text = describeSchema(review);
    for (const key of ["verdict", "summary", "score", "confidence", "reviewer", "labels", "author", "findings"]) {
      expect(text).toContain(`- "${key}"`);
    }
    for (const key of ["login", "bot", "file", "line", "severity"]) expect(text).toContain(`  - "${key}"`);
  });

  test("names each field's type", () => {
    const text = describeSchema(review);
    expect(lineFor(text, "summary")).toContain("string (at least 1 character, at most 500 characters)");
    expect(lineFor(text, "score")).toContain("integer >= 0 and <= 10");
    expect(lineFor(text, "confidence")).toContain("number");
    expect(lineFor(text, "reviewer")).toContain("string (email)");
    expect(lineFor(text, "labels")).toContain("array of string");
    expect(lineFor(text, "bot")).toContain("boolean");
    expect(lineFor(text, "author")).toContain("object with these fields");
    expect(lineFor(text, "findings")).toContain("array of objects with these fields");
  });

  test("lists every enum option, nested ones included", () => {
    const text = describeSchema(review);
    expect(lineFor(text, "verdict")).toContain('one of "approve" | "request-changes" | "comment"');
    expect(lineFor(text, "severity")).toContain('one of "low" | "high"');
  });

  test("marks fields required, optional, nullable or defaulted", () => {
    const text = describeSchema(review);
    expect(lineFor(text, "summary")).toContain("(required)");
    expect(lineFor(text, "reviewer")).toContain("(optional)");
    expect(lineFor(text, "confidence")).toContain("(required, nullable)");
    expect(lineFor(text, "labels")).toContain("(optional, default [])");
    expect(lineFor(text, "line")).toContain("(optional)");
  });

  test("includes .describe() texts, whether set inside or outside .optional()", () => {
    const text = describeSchema(z.object({ a: z.string().describe("inner text").optional(), b: z.string().optional().describe("outer text") }));
    expect(lineFor(text, "a")).toContain("inner text");
    expect(lineFor(text, "b")).toContain("outer text");
    expect(describeSchema(review)).toContain("Overall decision");
    expect(lineFor(describeSchema(review), "login")).toContain("GitHub handle");
  });

  test("ends with an example JSON shape that the schema itself accepts", () => {
    const example = exampleFrom(describeSchema(review));
    expect(review.safeParse(example).success).toBe(true);
    expect(example).toMatchObject({ verdict: "approve", score: 0, findings: [{ severity: "low", line: 1 }] });
  });

  test("gives the same text for the same schema every time", () => {
    const build = () => z.object({ id: z.uuid().default(() => crypto.randomUUID()), n: z.number() });
    expect(describeSchema(build())).toBe(describeSchema(build()));
    expect(describeSchema(review)).toBe(describeSchema(review));
  });

  test("describes unions, literals, tuples and records", () => {
    const text = describeSchema(
      z.object({
        kind: z.literal("patch"),
        target: z.union([z.string(), z.object({ path: z.string() })]),
        range: z.tuple([z.int(), z.int()]),
        counts: z.record(z.string(), z.number()),
      }),
    );
    expect(lineFor(text, "kind")).toContain('exactly "patch"');
    expect(lineFor(text, "target")).toContain("one of these alternatives");
    expect(text).toContain("- option 1: string.");
    expect(text).toContain('- "path" (required): string.');
    expect(lineFor(text, "range")).toContain("array of 2 items in this order");
    expect(lineFor(text, "counts")).toContain("object whose keys are string");
    expect(text).toContain("- each value: number.");
  });

  test("describes a non-object schema at the top level", () => {
    const text = describeSchema(z.array(z.enum(["a", "b"])).min(1));
    expect(text).toContain('The reply must be JSON: array of one of "a" | "b" (at least 1 item).');
    expect(exampleFrom(text)).toEqual(["a"]);
  });

  test("stops at a recursive schema instead of describing it forever", () => {
    type Tree = { name: string; children: Tree[] };
    const tree: z.ZodType<Tree> = z.lazy(() => z.object({ name: z.string(), children: z.array(tree) }));
    const text = describeSchema(tree);
    expect(lineFor(text, "children")).toContain("same shape as the enclosing one (recursive)");
    expect(exampleFrom(text)).toEqual({ name: "<string>", children: [] });
  });

  test("describes the input side of a transform", () => {
    const text = describeSchema(z.object({ count: z.string().transform((s) => Number(s)) }));
    expect(lineFor(text, "count")).toContain("string");
  });
});
