/**
 * The layer map: which top-level folders of src/ may import which, as a table. An import between
 * folders that the table does not list fails, as does one that enters a folder other than through
 * its index.ts, and a cycle in the table itself. Only src/db speaks SQL (drizzle-orm, bun:sqlite).
 * To add an edge, add it here: the table is the architecture, read top to bottom. A second table
 * does the same for the rooms of src/engine (see CONTRIBUTING.md, "Engine rooms").
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
  scorers: ["agents", "errors", "schema"], // smithers-workflows/scorers: the scorer contract, its checks and the built-ins
  jsx: ["agents", "db", "errors", "json", "schema", "scorers"],
  codec: ["errors", "jsx"],
  tools: ["agents", "contract", "db", "errors", "json", "schema"],
  memory: ["db", "errors", "tools"], // chunks with embeddings in _smithers_vectors; `ai` loaded only when a memory embeds
  engine: ["agents", "codec", "contract", "db", "errors", "json", "jsx", "mdx", "memory", "schema", "scorers", "tools"],
  server: ["contract", "db", "engine", "errors"],
  testing: ["agents", "db", "engine", "errors"], // smithers-workflows/testing: runs a workflow on a throwaway database and a virtual clock
  cli: ["agents", "codec", "contract", "db", "engine", "errors", "jsx", "scorers", "server"],
  ui: ["contract"],
};

/**
 * Room of src/engine -> the rooms it may import (through their index.ts). Leaves first.
 * src/engine/index.ts, the engine's public surface, may import every room.
 */
const ENGINE_ROOMS: Record<string, readonly string[]> = {
  core: [], // states, events, constants, budget, owner ids: the vocabulary every room shares
  schedule: ["core"], // the pure scheduler: no I/O
  workflow: ["core"], // createSmithers, ctx, loading a workflow file, input, code pin
  history: ["core", "workflow"], // frames, a run at a frame, plan diff, time travel, retention
  waits: ["core", "schedule", "workflow"], // one file per kind of wait; a child run is started through a function the run hands down
  attempt: ["core", "telemetry", "waits", "workflow"], // one attempt of a task and what it touches (side effects, spend, cache, worktree)
  run: ["attempt", "core", "history", "schedule", "telemetry", "waits", "workflow"], // the run loop: set-up, steps, commits, the event bus
  daemon: ["core", "run", "workflow"], // supervisor, workers, cron
  queries: ["core", "daemon", "history", "waits"], // read models for the CLI, the server and the dashboard
  telemetry: ["core"], // observers of the events: spans (through @opentelemetry/api; the OTLP SDK loaded only when tracing is on) and Prometheus metrics
};

/**
 * Files a folder may be entered by besides index.ts: the package's own entry points, and light
 * entries, a small module a process needs without loading the rest of its folder (each names
 * who needs it; one imports nothing outside its folder but leaves). src/engine is also entered
 * through the index.ts of one of its rooms: a command that needs one room (`ps` the queries,
 * `supervise` the daemon) loads that room, not the whole engine.
 */
const ENTRY_POINTS = new Set([
  "jsx/jsx-runtime.ts",
  "jsx/jsx-dev-runtime.ts",
  "mdx/preload.ts",
  "agents/cli/process-group.ts", // engine/core/owner.ts: a process's start time, without the agents
  "jsx/duration.ts", // cli/shared.ts: duration flags, without the renderer
  "jsx/plan.ts", // the plan's shape and node keys (waits, history, schedule), without the renderer
]);

/** Whether `target` (a path under src/) is the index.ts of one of src/engine's rooms. */
const isEngineRoom = (target: string) => /^engine\/[^/]+\/index\.ts$/.test(target);

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

/** Table -> cycle found in it, if any, and the order its keys were placed in (leaves first). */
function placeAll(table: Record<string, readonly string[]>): string[] {
  const placed: string[] = [];
  const visit = (folder: string, path: string[]) => {
    if (path.includes(folder)) throw new Error(`cycle: ${[...path, folder].join(" -> ")}`);
    if (placed.includes(folder)) return;
    for (const to of table[folder] ?? []) visit(to, [...path, folder]);
    placed.push(folder);
  };
  for (const folder of Object.keys(table)) visit(folder, []);
  return placed;
}

/** Imports from one room of src/engine into another (src/engine/index.ts is outside every room). */
function crossRoomImports(): Edge[] {
  const engine = join(SRC, "engine");
  const edges: Edge[] = [];
  for (const file of sourceFiles().filter((f) => f.startsWith(`${engine}/`))) {
    const fromParts = relative(engine, file).split("/");
    const from = fromParts.length > 1 ? fromParts[0]! : "index.ts";
    for (const spec of specifiers(readFileSync(file, "utf8"))) {
      if (!spec.startsWith(".")) continue;
      const target = relative(engine, resolve(dirname(file), spec));
      const to = target.split("/")[0]!;
      if (target.startsWith("..") || !target.includes("/") || to === from) continue;
      edges.push({ file: relative(SRC, file), spec, from, to, target });
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
    expect(placeAll(ALLOWED).length).toBe(Object.keys(ALLOWED).length);
  });

  test("an import between folders is one the table allows", () => {
    const outside = crossFolderImports().filter((e) => e.from !== "index.ts" && !(ALLOWED[e.from] ?? []).includes(e.to));
    expect(outside.map((e) => `${e.file}: ${e.spec}`)).toEqual([]);
  });

  test("a folder is entered only through its index.ts (or a package entry point, a light entry, or an engine room's index.ts)", () => {
    const deep = crossFolderImports().filter((e) => e.target !== `${e.to}/index.ts` && !ENTRY_POINTS.has(e.target) && !isEngineRoom(e.target));
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

describe("the rooms of src/engine", () => {
  const engine = join(SRC, "engine");

  test("the scanner sees the imports between rooms", () => {
    expect(crossRoomImports().length).toBeGreaterThan(30);
  });

  test("every room is in the table, the table has no cycle, and src/engine itself holds only index.ts", () => {
    const entries = readdirSync(engine, { withFileTypes: true });
    const rooms = entries
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();
    expect(rooms).toEqual(Object.keys(ENGINE_ROOMS).sort());
    expect(entries.filter((e) => e.isFile()).map((e) => e.name)).toEqual(["index.ts"]);
    expect(placeAll(ENGINE_ROOMS).length).toBe(Object.keys(ENGINE_ROOMS).length);
  });

  test("an import between rooms is one the table allows", () => {
    const outside = crossRoomImports().filter((e) => e.from !== "index.ts" && !(ENGINE_ROOMS[e.from] ?? []).includes(e.to));
    expect(outside.map((e) => `${e.file}: ${e.spec}`)).toEqual([]);
  });

  test("a room is entered only through its index.ts", () => {
    const deep = crossRoomImports().filter((e) => e.target !== `${e.to}/index.ts`);
    expect(deep.map((e) => `${e.file}: ${e.spec}`)).toEqual([]);
  });
});
