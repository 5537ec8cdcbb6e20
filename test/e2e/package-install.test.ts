/**
 * The package as a user gets it: `npm pack` (its prepack script bundles the CLI and the exports
 * into dist/bundle, its postpack removes that from the checkout again), then `npm install
 * smithers-workflows zod` into an empty project from a registry on 127.0.0.1
 * (test/support/local-registry.ts), with no Bun on PATH; then `npx smithers init`, `npm start`
 * and `npm test` in that project, and `npm start` again with the package's src/ moved away: the
 * command and the workflow's imports of smithers-workflows run from the bundle alone.
 */
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdtempSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { rm } from "node:fs/promises";
import { delimiter, join } from "node:path";
import pkg from "../../package.json";
import { startLocalRegistry, type LocalRegistry } from "../support/local-registry.ts";
import { root } from "./cli-helpers.ts";

const work = mkdtempSync(join(tmpdir(), "smithers-pack-"));
const project = join(work, "project");
let registry: LocalRegistry;
let env: Record<string, string>;

/** PATH without any directory that holds a `bun`: the project must bring its own. */
const pathWithoutBun = (process.env.PATH ?? "")
  .split(delimiter)
  .filter((dir) => dir && !existsSync(join(dir, "bun")))
  .join(delimiter);

/** Runs a command to its end; asynchronously, so the registry in this process can answer it. */
async function run(command: string[], cwd = project) {
  const proc = Bun.spawn(command, { cwd, env, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

beforeAll(async () => {
  // npm's own variables from an enclosing `npm test` (prefix, lifecycle, user agent) stay out.
  env = Object.fromEntries(Object.entries(process.env).filter(([key, value]) => !/^npm_/i.test(key) && value !== undefined)) as Record<string, string>;
  env.PATH = pathWithoutBun;
  env.npm_config_cache = join(work, "npm-cache");
  env.npm_config_audit = "false";
  env.npm_config_fund = "false";
  env.npm_config_update_notifier = "false";
  // With its scripts: prepack builds the bundle (prepare rebuilds the dashboard) and writes the
  // package.json that ships; postpack removes the bundle and puts the checkout's package.json back.
  const manifest = readFileSync(join(root, "package.json"), "utf8");
  const packed = await run(["npm", "pack", "--json", "--pack-destination", work], root);
  expect(packed.code).toBe(0);
  expect(existsSync(join(root, "dist", "bundle"))).toBe(false);
  expect(readFileSync(join(root, "package.json"), "utf8")).toBe(manifest);
  // npm prints the scripts' output before the JSON.
  const [{ filename }] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf("\n[") + 1)) as [{ filename: string }];
  registry = startLocalRegistry(join(root, "package-lock.json"), [{ manifest: pkg, tarball: join(work, filename) }]);
  env.npm_config_registry = registry.url;
  Bun.spawnSync(["mkdir", "-p", project]);
});

afterAll(async () => {
  await registry?.stop();
  // Hundreds of MB (two Bun binaries, npm's cache): removed here, not left to the suite's last hook.
  await rm(work, { recursive: true, force: true });
}, 120_000);

describe("the packed package, installed into an empty project", () => {
  test("ships the bin, the sources, the dashboard bundle and the docs, and no tests, benches, CI or dashboard sources", async () => {
    const listed = await run(["npm", "pack", "--dry-run", "--ignore-scripts", "--json"], root);
    const files = (JSON.parse(listed.stdout) as [{ files: Array<{ path: string }> }])[0].files.map((f) => f.path);
    expect(files).toEqual(
      expect.arrayContaining(["bin/smithers.js", "src/index.ts", "src/cli/index.ts", "dist/dashboard/index.html", "README.md", "package.json"]),
    );
    expect(files.filter((f) => /^(test|bench|\.ci|scripts|examples|src\/ui)\//.test(f))).toEqual([]);
  });

  test("a pack that fails after its prepack leaves the checkout's package.json as it was, and no bundle, once npm has exited", async () => {
    const manifest = readFileSync(join(root, "package.json"), "utf8");
    // prepack writes the package.json that ships; npm then cannot write the tarball, so postpack never runs.
    const failed = await run(["npm", "pack", "--pack-destination", join(work, "no-such-dir", "here")], root);
    expect(failed.stderr).toContain("ENOENT");
    expect(failed.code).not.toBe(0);
    // The prepack's guard puts the checkout back a moment after npm exits.
    const aside = join(root, "dist", "package.checkout.json");
    for (let waited = 0; waited < 5_000 && existsSync(aside); waited += 50) await Bun.sleep(50);
    expect(readFileSync(join(root, "package.json"), "utf8")).toBe(manifest);
    expect(existsSync(aside)).toBe(false);
    expect(existsSync(join(root, "dist", "bundle"))).toBe(false);
  }, 120_000);

  test("npm install, then npx smithers init, npm start and npm test work with no Bun installed by hand", async () => {
    expect((await run(["npm", "init", "-y"])).code).toBe(0);
    const installed = await run(["npm", "install", "smithers-workflows", "zod"]);
    expect(installed.stderr).not.toContain("ERR!");
    expect(installed.code).toBe(0);
    expect(installed.stderr).not.toContain("EBADENGINE");

    const help = await run(["npx", "--no", "--", "smithers", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("smithers init [dir]");

    const init = await run(["npx", "--no", "--", "smithers", "init"]);
    expect(init.stderr).toBe("");
    expect(init.code).toBe(0);
    for (const file of ["tsconfig.json", "workflows/hello.tsx", "test/hello.test.ts", ".gitignore"]) expect(existsSync(join(project, file))).toBe(true);
    expect(JSON.parse(readFileSync(join(project, "tsconfig.json"), "utf8")).compilerOptions.jsxImportSource).toBe("smithers-workflows");
    expect(JSON.parse(readFileSync(join(project, "package.json"), "utf8")).scripts).toMatchObject({
      start: expect.any(String),
      dev: expect.any(String),
      test: "smithers test",
    });

    const start = await run(["npm", "start"]);
    expect(start.code).toBe(0);
    expect(start.stdout).toContain("finished");
    expect(start.stdout).toContain("HELLO, ADA!");
    expect(existsSync(join(project, "smithers.db"))).toBe(true);
    // The command ran from the bundle, which writes a new database from the image it ships: a whole, sound WAL database.
    const made = new Database(join(project, "smithers.db"), { readonly: true });
    try {
      expect(made.query("PRAGMA journal_mode").get()).toEqual({ journal_mode: "wal" });
      expect(made.query("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
      expect(made.query("SELECT status FROM _smithers_runs").all()).toEqual([{ status: "finished" }]);
    } finally {
      made.close();
    }

    const tested = await run(["npm", "test"]);
    expect(`${tested.stdout}${tested.stderr}`).toMatch(/\b2 pass\b/);
    expect(tested.code).toBe(0);

    // The bundle is what `smithers` runs: with src/ gone, the command still starts, and the
    // workflow's `smithers-workflows` and JSX runtime resolve to the bundle, the same module
    // instances as the command's engine (a second engine would not recognise the workflow).
    const pkgDir = join(project, "node_modules/smithers-workflows");
    expect(existsSync(join(pkgDir, "dist/bundle/smithers.js"))).toBe(true);
    // The core's bytecode ships beside it: Bun loads it instead of parsing and compiling the core.
    expect(existsSync(join(pkgDir, "dist/bundle/core.js.jsc"))).toBe(true);
    expect(existsSync(join(pkgDir, "dist/bundle/new-database.sqlite"))).toBe(true);
    renameSync(join(pkgDir, "src"), join(pkgDir, "src-moved-away"));
    try {
      const fromBundle = await run(["npm", "start"]);
      expect(fromBundle.stderr).not.toContain("Cannot find module");
      // smithers() reads a stack to find its caller, so Bun decodes the bundle's source maps on this run.
      expect(fromBundle.stderr).not.toContain("Could not decode sourcemap");
      expect(fromBundle.code).toBe(0);
      expect(fromBundle.stdout).toContain("HELLO, ADA!");
      // A script of the project's own imports smithers-workflows by name, with no condition: the
      // packed package's exports default to the bundle (TypeScript still reads the sources).
      const shipped = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8")) as { exports: Record<string, unknown> };
      expect(shipped.exports["."]).toEqual({ types: "./src/index.ts", "smithers-bundle": "./dist/bundle/index.js", default: "./dist/bundle/index.js" });
      writeFileSync(
        join(project, "script.tsx"),
        `import { createSmithers, runWorkflow } from "smithers-workflows";
import { z } from "zod";
const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath: "script.db" });
const result = await runWorkflow(smithers(() => <Workflow name="script"><Task id="t" output={outputs.out}>{{ n: 7 }}</Task></Workflow>), { input: {} });
console.log(result.status, import.meta.resolve("smithers-workflows"));
`,
      );
      // The project's Bun (its npm package's binary, wherever this install left it).
      const installedBun = [
        join(project, "node_modules/bun/bin/bun.exe"),
        join(project, `node_modules/@oven/bun-${process.platform}-${process.arch === "arm64" ? "aarch64" : process.arch}/bin/bun`),
      ].find((file) => existsSync(file) && statSync(file).size >= 1_000_000);
      expect(installedBun).toBeDefined();
      const script = await run([installedBun!, "script.tsx"]);
      expect(script.stderr).toBe("");
      expect(script.code).toBe(0);
      expect(script.stdout).toMatch(/^finished file:.*node_modules\/smithers-workflows\/dist\/bundle\/index\.js\n$/);
      const scriptDb = new Database(join(project, "script.db"), { readonly: true });
      try {
        expect(scriptDb.query("SELECT n FROM out").all()).toEqual([{ n: 7 }]);
      } finally {
        scriptDb.close();
      }
      // Help is answered from the arguments alone (dist/bundle/help-answer.js): with the core gone too, it still prints.
      renameSync(join(pkgDir, "dist/bundle/core.js"), join(pkgDir, "dist/bundle/core-moved-away.js"));
      try {
        const help = await run(["npx", "--no", "--", "smithers", "ps", "--help"]);
        expect(help.stderr).toBe("");
        expect(help.code).toBe(0);
        expect(help.stdout).toStartWith("Usage: smithers ps ");
      } finally {
        renameSync(join(pkgDir, "dist/bundle/core-moved-away.js"), join(pkgDir, "dist/bundle/core.js"));
      }
    } finally {
      renameSync(join(pkgDir, "src-moved-away"), join(pkgDir, "src"));
    }

    const again = await run(["npx", "--no", "--", "smithers", "init"]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain("FILE_EXISTS");

    // Bun's npm package comes in one of two layouts: without its postinstall (npm's allowScripts),
    // bin/bun.exe is a placeholder and the binary sits in the platform package; after it, the
    // binary is bin/bun.exe. The steps above ran on the one this install made; now the other.
    const bunExe = join(project, "node_modules/bun/bin/bun.exe");
    const platformBun = join(project, `node_modules/@oven/bun-${process.platform}-${process.arch === "arm64" ? "aarch64" : process.arch}/bin/bun`);
    const placeholder = statSync(bunExe).size < 1_000_000;
    const [from, to] = placeholder ? [platformBun, bunExe] : [bunExe, platformBun];
    renameSync(from, to);
    chmodSync(to, 0o755);
    writeFileSync(from, "placeholder, replaced by Bun's postinstall\n");
    const otherLayout = await run(["npx", "--no", "--", "smithers", "ps"]);
    expect(otherLayout.stderr).toBe("");
    expect(otherLayout.stdout).toContain("finished");
    expect(otherLayout.code).toBe(0);
  }, 240_000);
});
