import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const SRC = resolve(import.meta.dir, "../../src");
const DB_INDEX = join(SRC, "db/index.ts");

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.tsx?$/.test(e.name))
    .map((e) => join(e.parentPath, e.name));
}

/** Every module specifier a file imports or re-exports, static or dynamic. */
function specifiers(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const found: string[] = [];
  for (const m of text.matchAll(/(?:^|[\s;])(?:import|export)\s[^"'`]*?from\s*["']([^"']+)["']/g)) found.push(m[1]!);
  for (const m of text.matchAll(/(?:^|[\s;])import\s*["']([^"']+)["']/g)) found.push(m[1]!);
  for (const m of text.matchAll(/\bimport\(\s*["']([^"']+)["']\s*\)/g)) found.push(m[1]!);
  return found;
}

/** `file: specifier` for each import that crosses into the database layer other than through src/db/index.ts. */
function violations(area: string): string[] {
  const out: string[] = [];
  for (const file of filesUnder(join(SRC, area))) {
    for (const spec of specifiers(file)) {
      const name = `${relative(SRC, file)}: ${spec}`;
      if (spec === "drizzle-orm" || spec.startsWith("drizzle-orm/") || spec === "bun:sqlite") out.push(name);
      else if (spec.startsWith(".")) {
        const target = resolve(dirname(file), spec);
        if (target.startsWith(`${join(SRC, "db")}/`) && target !== DB_INDEX) out.push(name);
      }
    }
  }
  return out;
}

describe("layer boundary", () => {
  test("the import scanner sees static, re-exported and dynamic imports", () => {
    expect(specifiers(join(SRC, "db/index.ts"))).toContain("./smithers-db.ts");
    expect(specifiers(join(SRC, "engine/workflow-file.ts"))).toContain("../errors/index.ts");
    expect(violations("db").length).toBeGreaterThan(0); // the db itself speaks Drizzle: the check can fail
  });

  for (const area of ["engine", "cli", "agents", "tools", "jsx", "codec", "schema"]) {
    test(`src/${area} reaches the database only through src/db/index.ts (no drizzle-orm, bun:sqlite or db internals)`, () => {
      expect(violations(area)).toEqual([]);
    });
  }
});
