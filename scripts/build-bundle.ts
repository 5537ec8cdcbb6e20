/**
 * Bundles the package with Bun.build into dist/bundle, what an installed `smithers` runs: all of
 * the package's code in one minified CommonJS file, `core.js`, with its bytecode beside it
 * (`core.js.jsc`) and a linked source map (a stack names src/ files and lines); and one small
 * file per export of package.json and one for the command (`smithers.js`), each handing out its
 * part of the core. Run by `npm pack` (the package's `prepack` script); `postpack` removes it
 * again (`--clean`), so a checkout never runs a bundle older than its sources.
 *
 * Why: a process that starts from src/ transpiles and links some 200 modules before its first
 * line runs, and then parses and compiles every function it calls; from the bundle it loads one
 * file whose functions are already compiled to bytecode (bench/cold and bench/cli measure both).
 * Bun 1.4.5 writes bytecode beside a bundle only in CommonJS form (ESM bytecode needs
 * `--compile`), and CommonJS cannot be split into chunks, so there is one core, and its parts
 * are built on first use: each getter of the core's exports requires its entry then, so the
 * `up` command initialises the engine, not the server or the agents. Reading the core's bytecode
 * costs by its size (~2 ms a MB) whatever runs, so a command that loads no workflow file can have
 * a file of its own with only its modules (LIGHT_COMMANDS): `smithers.js` runs it from there.
 *
 * One module instance: the exports map names each file under the `smithers-bundle` condition,
 * and bin/smithers.js starts Bun with `--conditions=smithers-bundle`, so a workflow's
 * `import … from "smithers-workflows"` (and its JSX runtime) in that process is the same core.
 * In the packed package every export's default is its bundled file too (`--pack`, npm's prepack,
 * writes that package.json; `--clean`, its postpack, puts the checkout's back): a script of a
 * project that installed it, or its `bun test`, loads the bundle, with the sources still named
 * under `types` for TypeScript. In a checkout (no bundle) the default is src/. npm runs no
 * postpack when the pack fails after its prepack (the tarball cannot be written, a `prepare` that
 * fails, Ctrl-C), so `--pack` leaves a guard that does its work once npm has exited.
 *
 *   bun scripts/build-bundle.ts [--pack | --clean]
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import type { BunPlugin } from "bun";
import { getTableName } from "drizzle-orm/table";
import { schemaStamp } from "../src/db/ensure.ts";
import { internalTables } from "../src/db/internal-schema.ts";
import { definedColumnNames } from "../src/db/lazy-table.ts";
import { buildNewDatabaseImage, SHIPPED_IMAGE_NAME } from "../src/db/new-sqlite-file.ts";

const ROOT = join(import.meta.dir, "..");
/** Two levels under the package root, as src/cli and src/server are: their `import.meta.dir`-relative paths (templates, the dashboard, package.json) hold in the bundle too. */
export const BUNDLE_DIR = join(ROOT, "dist", "bundle");
export const BUNDLE_CONDITION = "smithers-bundle";
/** The command's file in the bundle: bin/smithers.js runs it when present. */
export const BUNDLE_CLI = "smithers.js";
/**
 * The command's help (src/cli/help-answer.ts), bundled alone: smithers.js asks it first, so
 * `smithers --help` and `smithers <command> --help` print without loading the core (~7 ms of
 * reading and decoding its bytecode).
 */
export const BUNDLE_HELP = "help-answer.js";
/** The one bundled file, with its bytecode (`core.js.jsc`) and source map beside it. */
export const BUNDLE_CORE = "core.js";
/**
 * Commands that run from a file of their own, `command-<name>.js` with its bytecode, instead of the
 * core: the modules the command imports and nothing else (`ps`: ~0.7 MB of bytecode to read
 * instead of the core's ~2.7 MB, some 5 ms of every start). Only a command that loads no workflow
 * file can: a workflow's `import … from "smithers-workflows"` loads the core, and the engine that
 * runs it must be that one. The build refuses one whose file holds the workflow loader or the
 * package's root. A dynamic import the command does not take (another command, the rooms
 * `inspect` loads) is left out of its file and fails loudly if ever taken there.
 */
export const LIGHT_COMMANDS: Readonly<Record<string, string>> = {
  // The command, and its module: the one src/cli/index.ts imports for it.
  ps: "src/cli/ps.ts",
};
/** The file a light command runs from. */
export const lightCommandFile = (command: string) => `command-${command}.js`;
/** Modules a light command's file must not hold: each would load a workflow, which must meet the core. */
const NOT_IN_LIGHT_COMMAND = ["src/index.ts", "src/engine/workflow/workflow-file.ts"];
/**
 * Where the bundle sits at run time. Bun.build in CommonJS form writes `import.meta.dir` as the
 * directory of the source file at build time (a path on the machine that packed it), so the
 * sources' `import.meta.dir` and `import.meta.path` are replaced by these globals, which each
 * entry file sets from its own `__dirname` before it loads the core.
 */
const DIR_GLOBAL = "globalThis.__smithersBundleDir";
const FILE_GLOBAL = "globalThis.__smithersBundleFile";

/** Where `--pack` keeps the checkout's package.json while npm packs the one it wrote; `--clean` puts it back. */
const CHECKOUT_MANIFEST = join(ROOT, "dist", "package.checkout.json");
const MANIFEST = join(ROOT, "package.json");

type Pkg = {
  exports: Record<string, string | Record<string, string>>;
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
};

/** An export's subpath (`.`, `./jsx-runtime`) as the name of its file in the bundle. */
export function bundleName(subpath: string): string {
  return subpath === "." ? "index" : subpath.replace(/^\.\//, "").replace(/\//g, "-");
}

/** The source file of an export: its `default` target. */
function sourceOf(target: string | Record<string, string>): string {
  const source = typeof target === "string" ? target : target.default;
  if (!source) throw new Error(`an export without a default target: ${JSON.stringify(target)}`);
  return source;
}

/** An entry file: sets where the bundle is, then hands out `part` of the core (`expression` of it, for the command). */
function entryText(part: string, expression = ""): string {
  return (
    `"use strict";\n${DIR_GLOBAL} ??= __dirname;\n${FILE_GLOBAL} ??= require("path").join(__dirname, ${JSON.stringify(BUNDLE_CORE)});\n` +
    `module.exports = require("./${BUNDLE_CORE}")[${JSON.stringify(part)}]${expression};\n`
  );
}

/**
 * The command's entry: the help answered from the arguments alone, else the command line run by
 * the light command's own file (LIGHT_COMMANDS) or by the core.
 */
function commandEntryText(): string {
  const light = Object.fromEntries(Object.keys(LIGHT_COMMANDS).map((c) => [c, lightCommandFile(c)]));
  // helpAnswer answers only with no arguments, `help`, or a --help / -h among them: other command
  // lines skip reading it. Nothing is exported: Bun inspects the main module's exports (a server
  // config?) and the command line's promise never settles (the command exits).
  return (
    `"use strict";\nconst args = process.argv.slice(2);\n` +
    `const help = (args.length === 0 || args[0] === "help" || args.includes("--help") || args.includes("-h")) && require("./${BUNDLE_HELP}").helpAnswer(args);\n` +
    `if (help) {\n  console.log(help.text);\n  process.exit(help.code);\n}\n` +
    `const file = ${JSON.stringify(light)}[args[0]] ?? ${JSON.stringify(BUNDLE_CORE)};\n` +
    `${DIR_GLOBAL} ??= __dirname;\n${FILE_GLOBAL} ??= require("path").join(__dirname, file);\n` +
    `require("./" + file)["command"].runCommandLine();\n`
  );
}

/**
 * A light command's file leaves out what its modules import dynamically from src/ but the command's
 * own module: each becomes a module that throws, so taking one there fails with what happened
 * instead of loading a second copy of the engine.
 */
function leaveOutDynamicImports(command: string, module: string): BunPlugin {
  const src = join(ROOT, "src");
  return {
    name: "smithers-light-command",
    setup(build) {
      build.onResolve({ filter: /^\./ }, (args) => {
        if (args.kind !== "dynamic-import" || !args.importer.startsWith(src)) return undefined;
        const target = relative(ROOT, join(dirname(args.importer), args.path));
        return target === module ? undefined : { path: target, namespace: LEFT_OUT_NAMESPACE };
      });
      build.onLoad({ filter: /.*/, namespace: LEFT_OUT_NAMESPACE }, (args) => ({
        contents: `throw new Error(${JSON.stringify(`smithers ${command}: ${args.path} is not in this command's file (${lightCommandFile(command)}; see LIGHT_COMMANDS in scripts/build-bundle.ts)`)});\n`,
        loader: "js",
      }));
    },
  };
}
const LEFT_OUT_NAMESPACE = "smithers-left-out";

/**
 * The dependencies the core loads from node_modules rather than bundles: the user's zod and ai
 * must be the ones our code sees, and the others load when used (most only by some commands);
 * drizzle-orm is ours alone, and bundled. A CommonJS bundle would `require` them, which resolves a
 * package's `require` export: zod's CommonJS build, a second zod beside the ESM one the user's
 * workflow imports (schemas of one are not the other's). So each static import of one becomes a
 * require of what an `import` of it resolves to from the bundle's directory, the very module the
 * user's import loads; a dynamic `import()` of one stays as it is.
 */
function externals(packages: string[]): BunPlugin {
  const names = new Set(packages);
  const packageOf = (specifier: string) => (specifier.startsWith("@") ? specifier.split("/").slice(0, 2) : specifier.split("/").slice(0, 1)).join("/");
  return {
    name: "smithers-externals",
    setup(build) {
      build.onResolve({ filter: /^[@a-z]/ }, (args) => {
        if (!names.has(packageOf(args.path))) return undefined;
        return args.kind === "dynamic-import" ? { path: args.path, external: true } : { path: args.path, namespace: EXTERNAL_NAMESPACE };
      });
      build.onLoad({ filter: /.*/, namespace: EXTERNAL_NAMESPACE }, (args) => ({
        contents: `module.exports = require(Bun.resolveSync(${JSON.stringify(args.path)}, ${DIR_GLOBAL}));\n`,
        loader: "js",
      }));
    },
  };
}
const EXTERNAL_NAMESPACE = "smithers-external";

/** Each internal table's SQL names by field key, by table name: what SMITHERS_TABLE_COLUMNS holds. */
function tableColumns(): Record<string, Record<string, string>> {
  const columns: Record<string, Record<string, string>> = {};
  for (const table of Object.values(internalTables)) {
    const names = definedColumnNames(table);
    if (!names) throw new Error("an internal table is not a lazySqliteTable (src/db/lazy-table.ts)");
    columns[getTableName(table)] = { ...names };
  }
  return columns;
}

export async function buildBundle(): Promise<{ files: string[] }> {
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as Pkg;
  rmSync(BUNDLE_DIR, { recursive: true, force: true });
  const stubs = join(ROOT, "dist", ".bundle-entries");
  rmSync(stubs, { recursive: true, force: true });
  mkdirSync(stubs, { recursive: true });
  // The core's exports: one getter per part, requiring its source on first use (the bundler
  // wraps each module required this way in a function run once, when first required).
  const parts: Record<string, string> = Object.fromEntries(Object.entries(pkg.exports).map(([subpath, target]) => [bundleName(subpath), sourceOf(target)]));
  parts.command = "src/cli/index.ts";
  const getters = Object.entries(parts).map(
    ([part, source]) => `  get ${JSON.stringify(part)}() {\n    return require(${JSON.stringify(relative(stubs, join(ROOT, source)))});\n  },`,
  );
  const coreStub = join(stubs, BUNDLE_CORE.replace(/\.js$/, ".ts"));
  writeFileSync(coreStub, `module.exports = {\n${getters.join("\n")}\n};\n`);
  // The core and each light command's file: minified CommonJS with bytecode and a linked map.
  const externalNames = [...Object.keys(pkg.peerDependencies), ...Object.keys(pkg.dependencies).filter((name) => name !== "drizzle-orm")];
  const buildCjs = async (entry: string, what: string, plugins: BunPlugin[] = []) => {
    const result = await Bun.build({
      entrypoints: [entry],
      outdir: BUNDLE_DIR,
      target: "bun",
      format: "cjs",
      bytecode: true,
      minify: true,
      sourcemap: "linked",
      naming: { entry: "[name].js" },
      metafile: true,
      plugins: [...plugins, externals(externalNames)],
      // src/cli/index.ts runs the command when it is the main module; in the bundle smithers.js does.
      define: {
        "import.meta.main": "false",
        "import.meta.dir": DIR_GLOBAL,
        "import.meta.path": FILE_GLOBAL,
        // Computed here once: making the internal tables' DDL text to digest it is a few ms of every start.
        SMITHERS_SCHEMA_STAMP: String(schemaStamp()),
        // The internal tables' field keys and SQL names, so each table's column definitions are made when it is first read (src/db/lazy-table.ts).
        SMITHERS_TABLE_COLUMNS: JSON.stringify(JSON.stringify(tableColumns())),
      },
    });
    if (!result.success) throw new AggregateError(result.logs, `${what} failed to build`);
    if (!result.outputs.some((o) => o.kind === "bytecode")) throw new Error(`Bun.build wrote no bytecode for ${what}`);
    // The map keeps its mappings and drops the sources' text: the package ships src/, which the
    // map names, and Bun reads the map whenever a stack through the core is made (smithers()
    // makes one to find its caller), so every start would read the text too (~2 MB).
    for (const output of result.outputs) {
      if (output.kind !== "sourcemap") continue;
      const map = JSON.parse(readFileSync(output.path, "utf8")) as { sources: string[]; sourcesContent?: unknown };
      // null per source, as the format allows ("not available"): Bun rejects a map with no sourcesContent at all.
      map.sourcesContent = map.sources.map(() => null);
      writeFileSync(output.path, JSON.stringify(map));
    }
    return result;
  };
  try {
    const result = await buildCjs(coreStub, "The bundle");
    const outputs = [...result.outputs];
    for (const [command, module] of Object.entries(LIGHT_COMMANDS)) {
      const stub = join(stubs, lightCommandFile(command).replace(/\.js$/, ".ts"));
      writeFileSync(stub, `module.exports = { get command() {\n  return require(${JSON.stringify(relative(stubs, join(ROOT, parts.command!)))});\n} };\n`);
      const light = await buildCjs(stub, `The file of \`${command}\``, [leaveOutDynamicImports(command, module)]);
      const inputs = new Set(Object.keys(light.metafile?.inputs ?? {}).map((input) => resolve(input)));
      if (inputs.size === 0) throw new Error(`Bun.build told no inputs of the file of \`${command}\``);
      const held = NOT_IN_LIGHT_COMMAND.filter((source) => inputs.has(join(ROOT, source)));
      if (held.length > 0)
        throw new Error(
          `\`${command}\` cannot run from a file of its own: it imports ${held.join(" and ")} (it may load a workflow, which must meet the core)`,
        );
      outputs.push(...light.outputs);
    }
    const help = await Bun.build({
      entrypoints: [join(ROOT, "src", "cli", "help-answer.ts")],
      outdir: BUNDLE_DIR,
      target: "bun",
      format: "cjs",
      minify: true,
      naming: { entry: BUNDLE_HELP },
    });
    if (!help.success) throw new AggregateError(help.logs, "The help bundle failed to build");
    // A new database is written from this image (src/db/new-sqlite-file.ts), not made table by table at run time.
    const image = join(BUNDLE_DIR, SHIPPED_IMAGE_NAME);
    writeFileSync(image, buildNewDatabaseImage());
    const entries = Object.keys(parts).map((part) => {
      const file = join(BUNDLE_DIR, part === "command" ? BUNDLE_CLI : `${part}.js`);
      writeFileSync(file, part === "command" ? commandEntryText() : entryText(part));
      return file;
    });
    return { files: [...entries, ...outputs.map((o) => o.path), ...help.outputs.map((o) => o.path), image].map((f) => relative(ROOT, f)) };
  } finally {
    rmSync(stubs, { recursive: true, force: true });
  }
}

/**
 * The package.json npm packs: each export's default is its bundled file, as under the
 * smithers-bundle condition, and its source is its `types` (TypeScript reads the sources).
 */
export function packedManifest(text: string): string {
  const pkg = JSON.parse(text) as Pkg;
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    const bundled = typeof target === "object" ? target[BUNDLE_CONDITION] : undefined;
    if (typeof target !== "object" || !bundled || !target.default)
      throw new Error(`package.json: export ${subpath} names no ${BUNDLE_CONDITION} file and source`);
    pkg.exports[subpath] = { types: target.default, [BUNDLE_CONDITION]: bundled, default: bundled };
  }
  return `${JSON.stringify(pkg, null, 2)}\n`;
}

/** Puts the checkout's package.json back, if a `--pack` left it aside (its postpack, or a pack that failed before it). */
function restoreCheckoutManifest(): void {
  if (!existsSync(CHECKOUT_MANIFEST)) return;
  writeFileSync(MANIFEST, readFileSync(CHECKOUT_MANIFEST));
  rmSync(CHECKOUT_MANIFEST);
}

/** A file's identity now ("" when it is gone): the guard puts back only the aside file its pack wrote. */
function fileStamp(file: string): string {
  try {
    const s = statSync(file);
    return `${s.ino}:${s.mtimeMs}:${s.size}`;
  } catch {
    return "";
  }
}

const SHELLS = new Set(["sh", "bash", "dash", "zsh", "ash", "ksh", "busybox"]);

/** A process's parent and command name, from /proc (Linux) or ps (macOS); undefined when neither tells. */
function parentAndName(pid: number): { ppid: number; name: string } | undefined {
  try {
    // "pid (name) state ppid …": the name may hold spaces and parentheses.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const close = stat.lastIndexOf(")");
    return { ppid: Number(stat.slice(close + 2).split(" ")[1]), name: stat.slice(stat.indexOf("(") + 1, close) };
  } catch {
    const ps = spawnSync("ps", ["-o", "ppid=", "-o", "comm=", "-p", String(pid)], { encoding: "utf8" });
    const match = /^\s*(\d+)\s+(.+?)\s*$/.exec(ps.stdout ?? "");
    return match ? { ppid: Number(match[1]), name: basename(match[2]!) } : undefined;
  }
}

/** The process that runs this prepack (npm, or the client that packs): the nearest ancestor that is not a shell. */
function packerPid(): number | undefined {
  let pid = process.ppid;
  for (let depth = 0; depth < 4 && pid > 1; depth++) {
    const it = parentAndName(pid);
    if (!it) return undefined;
    if (!SHELLS.has(it.name)) return pid;
    pid = it.ppid;
  }
  return undefined;
}

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: string }).code === "EPERM";
  }
};

/**
 * `--restore-after PID STAMP`, started detached by `--pack`: once the packer has exited, does what
 * its postpack would have (the checkout's package.json back, the bundle removed) if that did not
 * run, i.e. the aside file `--pack` wrote (STAMP) is still there. An hour at most.
 */
async function guardPack(pid: number, stamp: string): Promise<void> {
  const until = Date.now() + 3_600_000;
  while (isAlive(pid) && Date.now() < until) await Bun.sleep(50);
  if (fileStamp(CHECKOUT_MANIFEST) !== stamp) return;
  // The aside file goes last: while it is there, the checkout is not yet as it was.
  rmSync(BUNDLE_DIR, { recursive: true, force: true });
  restoreCheckoutManifest();
}

const guarded = process.argv.indexOf("--restore-after");
if (import.meta.main && guarded >= 0) {
  await guardPack(Number(process.argv[guarded + 1]), process.argv[guarded + 2] ?? "");
} else if (import.meta.main) {
  restoreCheckoutManifest();
  if (process.argv.includes("--clean")) {
    rmSync(BUNDLE_DIR, { recursive: true, force: true });
  } else {
    const started = performance.now();
    const { files } = await buildBundle();
    console.log(`bundle built in ${Math.round(performance.now() - started)} ms: ${files.map((f) => basename(f)).join(", ")}, in ${relative(ROOT, BUNDLE_DIR)}`);
    if (!existsSync(join(BUNDLE_DIR, BUNDLE_CLI))) throw new Error(`the bundle has no ${BUNDLE_CLI}`);
    if (process.argv.includes("--pack")) {
      const checkout = readFileSync(MANIFEST, "utf8");
      const packed = packedManifest(checkout);
      writeFileSync(CHECKOUT_MANIFEST, checkout);
      writeFileSync(MANIFEST, packed);
      // Without a packer to wait for, a failed pack is undone by the next run of this script.
      const packer = packerPid();
      if (packer !== undefined)
        spawn(process.execPath, [import.meta.path, "--restore-after", String(packer), fileStamp(CHECKOUT_MANIFEST)], {
          detached: true,
          stdio: "ignore",
        }).unref();
    }
  }
}
