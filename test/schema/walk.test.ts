import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { z } from "zod";
import { def, unwrap } from "../../src/schema/index.ts";

const typeOf = (s: z.ZodType, side: "input" | "output") => def(unwrap(s, side).core).type;

describe("unwrap", () => {
  test("a pipe is read on the side asked for: what parses (input) or what is produced (output)", () => {
    const piped = z.string().pipe(z.coerce.number());
    expect(typeOf(piped, "input")).toBe("string");
    expect(typeOf(piped, "output")).toBe("number");
  });

  test("a bare transform on one side defers to the other side", () => {
    expect(
      typeOf(
        z.string().transform((s) => s.length),
        "output",
      ),
    ).toBe("string");
    expect(
      typeOf(
        z.preprocess((v) => v, z.number()),
        "input",
      ),
    ).toBe("number");
  });

  test("reports optional and nullable wrappers separately, through defaults and readonly", () => {
    expect(unwrap(z.string().optional())).toMatchObject({ optional: true, nullable: false });
    expect(unwrap(z.string().nullable().default(null).readonly())).toMatchObject({ optional: false, nullable: true });
  });

  test("z.success is a boolean on the output side, its inner schema on the input side", () => {
    expect(typeOf(z.success(z.string()), "input")).toBe("string");
    expect(typeOf(z.success(z.string()), "output")).toBe("success");
  });
});

describe("src/schema", () => {
  test("is the only place that reads Zod internals (_zod)", () => {
    const src = resolve(import.meta.dir, "../../src");
    const readers = readdirSync(src, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile() && e.name.endsWith(".ts") && !e.parentPath.startsWith(join(src, "schema")))
      .map((e) => join(e.parentPath, e.name))
      .filter((file) => readFileSync(file, "utf8").includes("_zod"))
      .map((file) => file.slice(src.length + 1));
    expect(readers).toEqual([]);
  });
});
