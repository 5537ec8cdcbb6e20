/**
 * The layer map: which top-level folders of src/ may import which, as a table. An import between
 * folders that the table does not list fails, as does one that enters a folder other than through
 * its index.ts, and a cycle in the table itself. Only src/db speaks SQL (drizzle-orm, bun:sqlite).
 * To add an edge, add it here: the table is the architecture, read top to bottom.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const SRC = resolve(import.meta.dir, "../src");

/** Folder -> the folders it may import (through their index.ts). Leaves first. */
const ALLOWED: Record<string, readonly string[]> = {
  contract: [], // the API's names and JSON shapes; imports nothing (the dashboard bundles it)
  errors: [],
  json: [],
  mdx: [],
  schema: ["json"],
  db: ["contract", "errors", "json", "schema"],
  agents: ["errors", "json", "schema"],
  jsx: ["agents", "db", "errors", "json", "schema"],
  codec: ["errors", "jsx"],
  tools: ["agents", "contract", "db", "errors", "json", "schema"],
  engine: ["agents", "codec", "contract", "db", "errors", "json", "jsx", "mdx", "schema", "tools"],
  server: ["contract", "db", "engine", "errors"],
  cli: ["agents", "codec", "contract", "db", "engine", "errors", "jsx", "server"],
  ui: ["contract"],
};

/** Files a folder may be entered by besides index.ts: the package's own entry points. */
const ENTRY_POINTS = new Set(["jsx/jsx-runtime.ts", "jsx/jsx-dev-runtime.ts", "mdx/preload.ts"]);

function sourceFiles(): string[] {
  return readdirSync(SRC, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.tsx?$/.test(e.name))
    .map((e) => join(e.parentPath, e.name));
}

/** Every module specifier a file imports or re-exports, static or dynamic (and require()). */
export function specifiers(text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/(?:^|[\s;])(?:import|export)\s[^"'`]*?from\s*["']([^"']+)["']/g)) found.push(m[1]!);
  for (const m of text.matchAll(/(?:^|[\s;])import\s*["']([^"']+)["']/g)) found.push(m[1]!);
  for (const m of text.matchAll(/\b(?:import|require)\(\s*["']([^"']+)["']\s*\)/g)) found.push(m[1]!);
  return found;
}

type Edge = { file: string; spec: string; from: string; to: string; target: string };

function crossFolderImports(): Edge[] {
  const edges: Edge[] = [];
  for (const file of sourceFiles()) {
    const from = relative(SRC, file).split("/")[0]!;
    for (const spec of specifiers(readFileSync(file, "utf8"))) {
      if (!spec.startsWith(".")) continue;
      const target = relative(SRC, resolve(dirname(file), spec));
      const to = target.split("/")[0]!;
      if (to !== from && !target.startsWith("..")) edges.push({ file: relative(SRC, file), spec, from, to, target });
    }
  }
  return edges;
}

describe("the layer map", () => {
  test("the scanner sees static, re-exported, dynamic and require() imports", () => {
    expect(specifiers('import a from "./a.ts";\nexport { b } from "../b/index.ts";\nconst c = await import("./c.ts");\nrequire("./d.ts");')).toEqual([
      "./a.ts",
      "../b/index.ts",
      "./c.ts",
      "./d.ts",
    ]);
    expect(crossFolderImports().length).toBeGreaterThan(50); // the check sees the real tree
  });

  test("every folder of src/ is in the table, and the table has no cycle", () => {
    const folders = readdirSync(SRC, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();
    expect(folders).toEqual(Object.keys(ALLOWED).sort());
    const placed: string[] = [];
    const visit = (folder: string, path: string[]) => {
      if (path.includes(folder)) throw new Error(`cycle: ${[...path, folder].join(" -> ")}`);
      if (placed.includes(folder)) return;
      for (const to of ALLOWED[folder] ?? []) visit(to, [...path, folder]);
      placed.push(folder);
    };
    for (const folder of Object.keys(ALLOWED)) visit(folder, []);
    expect(placed.length).toBe(Object.keys(ALLOWED).length);
  });

  test("an import between folders is one the table allows", () => {
    const outside = crossFolderImports().filter((e) => e.from !== "index.ts" && !(ALLOWED[e.from] ?? []).includes(e.to));
    expect(outside.map((e) => `${e.file}: ${e.spec}`)).toEqual([]);
  });

  test("a folder is entered only through its index.ts (or a package entry point)", () => {
    const deep = crossFolderImports().filter((e) => e.target !== `${e.to}/index.ts` && !ENTRY_POINTS.has(e.target));
    expect(deep.map((e) => `${e.file}: ${e.spec}`)).toEqual([]);
  });

  test("only src/db speaks SQL: no drizzle-orm or bun:sqlite elsewhere", () => {
    const speaking = sourceFiles()
      .filter((file) => !relative(SRC, file).startsWith("db/"))
      .flatMap((file) =>
        specifiers(readFileSync(file, "utf8"))
          .filter((spec) => spec === "drizzle-orm" || spec.startsWith("drizzle-orm/") || spec === "bun:sqlite")
          .map((spec) => `${relative(SRC, file)}: ${spec}`),
      );
    expect(speaking).toEqual([]);
  });
});
