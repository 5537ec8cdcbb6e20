/**
 * --ours-from bundle: the shape rows' worker (ours.tsx) as a user's script in an installed project
 * runs: in a project whose node_modules links smithers-workflows (to the tree measured) and zod,
 * importing both by name, started under the smithers-bundle condition, so it loads the tree's
 * bundle (dist/bundle: one file and its bytecode) as the packed package hands it to a script.
 */
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BENCH_DIR, HERE, type OursTree } from "./spawn.ts";
import { oursProject } from "./up-file.ts";

/** `text` with each [from, to] replaced once; a `from` that is not there is an error (the worker changed: update this list). */
function rewrite(file: string, edits: readonly [string, string][]): string {
  let text = readFileSync(file, "utf8");
  for (const [from, to] of edits) {
    if (!text.includes(from)) throw new Error(`bench/compare: ${file} no longer holds ${JSON.stringify(from)}; update ours-project.ts`);
    text = text.replace(from, to);
  }
  return text;
}

/** The worker's path in the project made for `ours` (made again each call: the bench's sources may have changed). */
export function bundleWorker(ours: OursTree): string {
  const dir = oursProject(ours, "ours-shapes");
  const byName: [string, string][] = [
    ["@jsxImportSource ../../src/jsx", "@jsxImportSource smithers-workflows"],
    ['from "../../src/index.ts"', 'from "smithers-workflows"'],
    ['from "../zod.ts"', 'from "zod"'],
    ['from "../shape-workflows.tsx"', 'from "./shape-workflows.tsx"'],
    ['import("../statement-counter.ts")', 'import("./statement-counter.ts")'],
  ];
  writeFileSync(join(dir, "ours.tsx"), rewrite(join(HERE, "ours.tsx"), byName));
  writeFileSync(
    join(dir, "shape-workflows.tsx"),
    rewrite(join(BENCH_DIR, "shape-workflows.tsx"), [
      ["@jsxImportSource ../src/jsx", "@jsxImportSource smithers-workflows"],
      ['from "../src/index.ts"', 'from "smithers-workflows"'],
      ['from "./compare/protocol.ts"', 'from "./protocol.ts"'],
    ]),
  );
  copyFileSync(join(HERE, "protocol.ts"), join(dir, "protocol.ts"));
  copyFileSync(join(BENCH_DIR, "statement-counter.ts"), join(dir, "statement-counter.ts"));
  return join(dir, "ours.tsx");
}
