/** `smithers init [dir]`: scaffolds a project that runs at once, and `smithers test`: the project's tests under the Bun that runs smithers. */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { constants } from "node:os";
import { basename, dirname, join, relative, resolve } from "node:path";
import { parseArgs } from "./parse-args.ts";
import { SmithersError } from "../errors/index.ts";
import { EXIT, type Io } from "./shared.ts";
import { GITIGNORE_LINES, NPM_PLACEHOLDER_TEST, SCRIPTS, TEMPLATE_DIR, TEMPLATE_FILES } from "./init-templates.ts";

/** This package's name and version, for the scaffolded package.json's dependency. */
function ownPackage(): { name: string; version: string } {
  return JSON.parse(readFileSync(join(import.meta.dir, "..", "..", "package.json"), "utf8")) as { name: string; version: string };
}

type PackageJson = { scripts?: Record<string, string>; [key: string]: unknown };

/** The package.json to write: a new one, or `existing` with the scripts added; the scripts it would have to overwrite. */
function packageJson(existing: PackageJson | undefined, dir: string, force: boolean): { json: PackageJson; clashes: string[] } {
  const own = ownPackage();
  const json: PackageJson = existing ?? {
    name:
      basename(dir)
        .toLowerCase()
        .replace(/[^a-z0-9._-]+/g, "-") || "workflows",
    version: "0.1.0",
    private: true,
    type: "module",
    dependencies: { [own.name]: `^${own.version}`, zod: "^4.0.0" },
  };
  const scripts = { ...(json.scripts ?? {}) };
  const clashes: string[] = [];
  for (const [name, command] of Object.entries(SCRIPTS)) {
    const current = scripts[name];
    if (current === undefined || current === command || current === NPM_PLACEHOLDER_TEST || force) scripts[name] = command;
    else clashes.push(`package.json script "${name}"`);
  }
  return { json: { ...json, scripts }, clashes };
}

export async function initCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args, options: { force: { type: "boolean" } }, allowPositionals: true });
  if (positionals.length > 1) throw new SmithersError("USAGE", `init takes one directory, got ${positionals.length}`);
  const dir = resolve(positionals[0] ?? ".");
  const force = values.force === true;
  if (existsSync(dir) && !existsSync(join(dir, "."))) throw new SmithersError("USAGE", `${dir} is a file, not a directory`);

  const files = TEMPLATE_FILES.map((path): [string, string] => [path, readFileSync(join(TEMPLATE_DIR, path), "utf8")]);
  const pkgPath = join(dir, "package.json");
  const existingPkg = existsSync(pkgPath) ? (JSON.parse(readFileSync(pkgPath, "utf8")) as PackageJson) : undefined;
  const pkg = packageJson(existingPkg, dir, force);
  const clashes = [...files.filter(([path]) => existsSync(join(dir, path))).map(([path]) => path), ...pkg.clashes];
  if (clashes.length > 0 && !force) {
    throw new SmithersError("FILE_EXISTS", `init would overwrite ${clashes.join(", ")} in ${dir}; nothing was written (--force overwrites them)`);
  }

  mkdirSync(dir, { recursive: true });
  const wrote: string[] = [];
  for (const [path, text] of files) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
    wrote.push(path);
  }
  writeFileSync(pkgPath, `${JSON.stringify(pkg.json, null, 2)}\n`);
  wrote.push(existingPkg ? "package.json (scripts)" : "package.json");
  const ignorePath = join(dir, ".gitignore");
  const ignored = existsSync(ignorePath) ? readFileSync(ignorePath, "utf8") : "";
  const missing = GITIGNORE_LINES.filter((line) => !ignored.split(/\r?\n/).includes(line));
  if (missing.length > 0) {
    writeFileSync(ignorePath, `${ignored}${ignored === "" || ignored.endsWith("\n") ? "" : "\n"}${missing.join("\n")}\n`);
    wrote.push(".gitignore");
  }

  const own = ownPackage();
  const installed = existsSync(join(dir, "node_modules", own.name));
  const near = relative(process.cwd(), dir);
  const where = near === "" ? "." : near.startsWith("..") ? dir : near;
  io.out(`smithers init: wrote ${wrote.join(", ")} in ${where}`);
  io.out("Next:");
  if (where !== ".") io.out(`  cd ${where}`);
  if (!installed) io.out(`  npm install              # ${own.name} and zod`);
  io.out(`  npm start                # runs workflows/hello.tsx into smithers.db (${SCRIPTS.start})`);
  io.out("  npm test                 # its test, on an in-memory database and a virtual clock");
  io.out("  npm run dev              # the dashboard and HTTP API for workflows/ on http://127.0.0.1:7331");
  return EXIT.ok;
}

/** `smithers test [bun test args]`: `bun test` with the Bun that runs this command, so the project needs no Bun of its own. */
export async function testCommand(args: string[]): Promise<number> {
  const child = spawn(process.execPath, ["test", ...args], { stdio: "inherit" });
  return await new Promise<number>((done, fail) => {
    child.on("error", fail);
    child.on("exit", (code, signal) => done(code ?? 128 + (signal ? constants.signals[signal] : 1)));
  });
}
