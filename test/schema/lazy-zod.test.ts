/** zod() loads zod when first called: the very module a workflow's `import { z } from "zod"` gets. */
import { expect, test } from "bun:test";
import { z } from "zod";
import { lazyEnum, zod } from "../../src/schema/zod.ts";

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
