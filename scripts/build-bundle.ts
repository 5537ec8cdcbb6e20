/**
 * Bundles the package's entry points with Bun.build into dist/bundle, what an installed
 * `smithers` runs: one minified file per export of package.json and one for the command
 * (`smithers.js`), shared code in chunks beside them, with linked source maps (a stack names
 * src/ files and lines). Run by `npm pack` (the package's `prepack` script); `postpack` removes it
 * again (`--clean`), so a checkout never runs a bundle older than its sources.
 *
 * Why: a process that starts from src/ transpiles and links some 200 modules before its first
 * line runs; from the bundle it parses a few files (bench/cli measures both).
 *
 * One module instance: the exports map names each bundled file under the `smithers-bundle`
 * condition, and bin/smithers.js starts Bun with `--conditions=smithers-bundle`, so a workflow's
 * `import … from "smithers-workflows"` (and its JSX runtime) in that process is the bundle too.
 * Elsewhere (`bun test`, a script of the user's) the same names resolve to src/.
 *
 *   bun scripts/build-bundle.ts [--clean]
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, join, relative } from "node:path";

const ROOT = join(import.meta.dir, "..");
/** Two levels under the package root, as src/cli and src/server are: their `import.meta.dir`-relative paths (templates, the dashboard, package.json) hold in the bundle too. */
export const BUNDLE_DIR = join(ROOT, "dist", "bundle");
export const BUNDLE_CONDITION = "smithers-bundle";
/** The command's file in the bundle: bin/smithers.js runs it when present. */
export const BUNDLE_CLI = "smithers.js";

type Pkg = {
  exports: Record<string, string | Record<string, string>>;
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
};

/** An export's subpath (`.`, `./jsx-runtime`) as the name of its bundled file. */
export function bundleName(subpath: string): string {
  return subpath === "." ? "index" : subpath.replace(/^\.\//, "").replace(/\//g, "-");
}

/** The source file of an export: its `default` target. */
function sourceOf(target: string | Record<string, string>): string {
  const source = typeof target === "string" ? target : target.default;
  if (!source) throw new Error(`an export without a default target: ${JSON.stringify(target)}`);
  return source;
}

export async function buildBundle(): Promise<{ files: string[] }> {
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as Pkg;
  rmSync(BUNDLE_DIR, { recursive: true, force: true });
  // Each entry is a one-line module named after its export, so every output file sits flat in
  // dist/bundle under a name of our choosing (Bun names an entry after its file).
  const stubs = join(ROOT, "dist", ".bundle-entries");
  rmSync(stubs, { recursive: true, force: true });
  mkdirSync(stubs, { recursive: true });
  const entrypoints: string[] = [];
  const stub = (name: string, text: string) => {
    const path = join(stubs, `${name}.ts`);
    writeFileSync(path, text);
    entrypoints.push(path);
  };
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    const source = relative(stubs, join(ROOT, sourceOf(target)));
    stub(bundleName(subpath), `export * from ${JSON.stringify(source)};\n`);
  }
  const cli = relative(stubs, join(ROOT, "src", "cli", "index.ts"));
  stub(basename(BUNDLE_CLI, ".js"), `import { runCommandLine } from ${JSON.stringify(cli)};\nawait runCommandLine();\n`);
  try {
    const result = await Bun.build({
      entrypoints,
      outdir: BUNDLE_DIR,
      target: "bun",
      format: "esm",
      splitting: true,
      minify: true,
      sourcemap: "linked",
      naming: { entry: "[name].[ext]", chunk: "chunk-[hash].[ext]" },
      // The user's zod and ai must be the ones our code sees; the other dependencies load from
      // node_modules when used (most only by some commands). drizzle-orm is ours alone, and bundled.
      external: [...Object.keys(pkg.peerDependencies), ...Object.keys(pkg.dependencies).filter((name) => name !== "drizzle-orm")].flatMap((name) => [
        name,
        `${name}/*`,
      ]),
      // src/cli/index.ts runs the command when it is the main module; in the bundle smithers.js does.
      define: { "import.meta.main": "false" },
    });
    if (!result.success) throw new AggregateError(result.logs, "The bundle failed to build");
    // The maps keep their mappings and drop the sources' text: the package ships src/, which the
    // maps name, and Bun reads a chunk's map whenever a stack through it is made (smithers() makes
    // one to find its caller), so every start would read the text too (~1.4 MB for `up`).
    for (const output of result.outputs) {
      if (output.kind !== "sourcemap") continue;
      const map = JSON.parse(readFileSync(output.path, "utf8")) as { sources: string[]; sourcesContent?: unknown };
      // null per source, as the format allows ("not available"): Bun rejects a map with no sourcesContent at all.
      map.sourcesContent = map.sources.map(() => null);
      writeFileSync(output.path, JSON.stringify(map));
    }
    return { files: result.outputs.map((o) => relative(ROOT, o.path)) };
  } finally {
    rmSync(stubs, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  if (process.argv.includes("--clean")) {
    rmSync(BUNDLE_DIR, { recursive: true, force: true });
  } else {
    const started = performance.now();
    const { files } = await buildBundle();
    const entries = files.filter((f) => !f.endsWith(".map") && !basename(f).startsWith("chunk-"));
    console.log(
      `bundle built in ${Math.round(performance.now() - started)} ms: ${entries.length} entries (${entries.map((f) => basename(f)).join(", ")}), ${files.length - entries.length} chunks and maps, in ${relative(ROOT, BUNDLE_DIR)}`,
    );
    if (!existsSync(join(BUNDLE_DIR, BUNDLE_CLI))) throw new Error(`the bundle has no ${BUNDLE_CLI}`);
  }
}
