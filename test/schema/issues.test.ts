import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { formatIssuePath, formatZodIssues } from "../../src/schema/index.ts";

const issuesOf = (schema: z.ZodType, value: unknown) => {
  const parsed = schema.safeParse(value);
  if (parsed.success) throw new Error("expected a failure");
  return parsed.error.issues;
};

describe("formatIssuePath", () => {
  test("writes keys as a property path, indexes in brackets and odd keys quoted; empty is (root)", () => {
    expect(formatIssuePath([])).toBe("(root)");
    expect(formatIssuePath(["items", 0, "name"])).toBe("items[0].name");
    expect(formatIssuePath(["a b", "c"])).toBe('["a b"].c');
  });
});

describe("formatZodIssues", () => {
  test("one `path: message` per issue, joined by the separator (a new line by default)", () => {
    const issues = issuesOf(z.object({ a: z.string(), b: z.array(z.number()) }), { a: 1, b: [1, "x"] });
    expect(formatZodIssues(issues)).toBe("a: Invalid input: expected string, received number\nb[1]: Invalid input: expected number, received string");
    expect(formatZodIssues(issues, "; ")).toBe("a: Invalid input: expected string, received number; b[1]: Invalid input: expected number, received string");
  });

  test("a failed union lists what each option expected", () => {
    const issues = issuesOf(z.object({ v: z.union([z.string(), z.object({ n: z.number() })]) }), { v: { n: "1" } });
    expect(formatZodIssues(issues)).toBe(
      "v: Invalid input (option 1: v: Invalid input: expected string, received object; option 2: v.n: Invalid input: expected number, received string)",
    );
  });
});
