/**
 * bench/cli: what a `smithers` process costs from spawn to exit, run from src/ (a checkout, or a
 * package packed without its bundle) and from the bundle `npm pack` builds (scripts/build-bundle.ts),
 * beside the imports floor (../compare/imports-floor.ts: a Bun process that imports zod and
 * Drizzle's SQLite core and exits). Commands: `--help`, `up` of a 5-task workflow on a new
 * database, and `ps` on a database of 10,000 finished runs. Every measurement is a fresh process;
 * the variants alternate; medians.
 *
 *   bun run bench/cli/index.ts [--reps 15] [--runs 10000] [--before GIT_REF]
 *
 * --before adds two columns: that commit's src/ (exported with git archive), as it was before, and
 * the bundle that commit's own scripts/build-bundle.ts makes of it.
 * The workflow file imports `smithers-workflows` by name, from a scratch project per variant
 * whose node_modules links to the tree measured, as an installed project's does: from the
 * bundle, under `--conditions=smithers-bundle`, that name is the bundle too (one module
 * instance). The bundle is built into dist/bundle for the run and removed after it, unless one
 * was there.
 */
import { Database } from "bun:sqlite";
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { SqliteDb } from "../../src/db/index.ts";
import { BUNDLE_CLI, BUNDLE_CONDITION, BUNDLE_DIR, buildBundle } from "../../scripts/build-bundle.ts";
import { insertIdleRuns } from "../idle-runs.ts";
import { markdownTable } from "../markdown-table.ts";
import { fmtMs, median, runChild } from "../compare/spawn.ts";

const ROOT = resolve(import.meta.dir, "../..");
const BUN = process.execPath;
const UP_TASKS = 5;

/** One way of running the command: a package root, and what `bun` is given before the command's arguments. */
type Variant = { name: string; root: string; entry: string[] };
type Command = { label: string; args: (project: string, dbPath: string) => string[]; fresh: boolean; check: (stdout: string) => boolean };

/** A project whose node_modules holds `smithers-workflows` (a link to `root`) and zod, with the `up` workflow. */
function scratchProject(dir: string, root: string): string {
  mkdirSync(join(dir, "node_modules"), { recursive: true });
  symlinkSync(root, join(dir, "node_modules", "smithers-workflows"), "dir");
  symlinkSync(join(ROOT, "node_modules", "zod"), join(dir, "node_modules", "zod"), "dir");
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({ compilerOptions: { jsx: "react-jsx", jsxImportSource: "smithers-workflows", module: "esnext", moduleResolution: "bundler" } }),
  );
  const tasks = Array.from({ length: UP_TASKS }, (_, i) => `      <Task id="t${i}" output={outputs.out}>{{ n: ${i} }}</Task>`).join("\n");
  writeFileSync(
    join(dir, "up.tsx"),
    `import { createSmithers } from "smithers-workflows";
import { z } from "zod";
const { Workflow, Task, Sequence, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) });
export default smithers(() => (
  <Workflow name="up${UP_TASKS}">
    <Sequence>
${tasks}
    </Sequence>
  </Workflow>
));
`,
  );
  return dir;
}

/** `ref`'s src/, package.json, templates and bundle script in `dir`, with this checkout's node_modules, and its bundle built. */
function exportRef(ref: string, dir: string): string {
  const root = join(dir, "ref");
  mkdirSync(root, { recursive: true });
  const tar = Bun.spawnSync(["sh", "-c", `git archive --format=tar "$0" src package.json tsconfig.json templates scripts | tar -x -C "$1"`, ref, root], {
    cwd: ROOT,
    stderr: "pipe",
  });
  if (tar.exitCode !== 0) throw new Error(`exporting ${ref}: ${tar.stderr.toString().trim()}`);
  symlinkSync(join(ROOT, "node_modules"), join(root, "node_modules"), "dir");
  const built = Bun.spawnSync([BUN, join(root, "scripts", "build-bundle.ts")], { cwd: root, stderr: "pipe" });
  if (built.exitCode !== 0) throw new Error(`building ${ref}'s bundle: ${built.stderr.toString().trim()}`);
  return root;
}

const COMMANDS: Command[] = [
  { label: "`smithers --help`", args: () => ["--help"], fresh: false, check: (out) => out.includes("smithers up <workflow.tsx>") },
  {
    label: `\`smithers up\`, ${UP_TASKS} tasks, new database`,
    args: (project, db) => ["up", join(project, "up.tsx"), "--db", db],
    fresh: true,
    check: (out) => out.includes("finished"),
  },
  { label: "`smithers ps`, 10,000 runs", args: (_, db) => ["ps", "--db", db], fresh: false, check: (out) => out.split("\n").filter(Boolean).length === 21 },
];

export async function runCliBench(argv: string[] = []): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { reps: { type: "string" }, runs: { type: "string" }, before: { type: "string" } } });
  const reps = Number(values.reps ?? 15);
  const runs = Number(values.runs ?? 10_000);
  if (!Number.isInteger(reps) || reps < 1 || !Number.isInteger(runs) || runs < 20) throw new Error("--reps wants a positive integer, --runs one of 20 or more");
  const hadBundle = existsSync(join(BUNDLE_DIR, BUNDLE_CLI));
  if (!hadBundle) await buildBundle();
  const dir = mkdtempSync(join(tmpdir(), "smithers-bench-cli-"));
  try {
    const before = values.before ? exportRef(values.before, dir) : undefined;
    const variants: Variant[] = [
      ...(before && values.before
        ? [
            { name: `src/ before (${values.before})`, root: before, entry: [] },
            { name: `bundle before (${values.before})`, root: before, entry: [`--conditions=${BUNDLE_CONDITION}`, join(before, "dist", "bundle", BUNDLE_CLI)] },
          ]
        : []),
      { name: "src/", root: ROOT, entry: [] },
      { name: "bundle", root: ROOT, entry: [`--conditions=${BUNDLE_CONDITION}`, join(BUNDLE_DIR, BUNDLE_CLI)] },
    ].map((v) => ({ ...v, entry: v.entry.length ? v.entry : [join(v.root, "src", "cli", "index.ts")] }));
    const projects = variants.map((v, i) => scratchProject(join(dir, `project-${i}`), v.root));
    const psDb = join(dir, "ps.db");
    const seeded = new SqliteDb(psDb);
    insertIdleRuns(seeded.sqlite, 0, runs, Date.now());
    await seeded.close();
    const samples = new Map<string, number[]>();
    const add = (key: string, ms: number) => samples.set(key, [...(samples.get(key) ?? []), ms]);
    const cpu = new Map<string, number[]>();
    const addCpu = (key: string, ms: number) => cpu.set(key, [...(cpu.get(key) ?? []), ms]);
    const timeout = 60_000;
    for (let rep = 0; rep < reps; rep++) {
      const floor = await runChild([BUN, join(ROOT, "bench", "compare", "imports-floor.ts")], dir, {}, timeout);
      if (floor.code !== 0) throw new Error(`the imports floor failed: ${floor.stderr}`);
      add("floor", floor.elapsedMs);
      addCpu("floor", floor.cpuMs);
      for (const command of COMMANDS) {
        // Rotate which variant goes first, so none always runs on a machine another just warmed.
        for (let k = 0; k < variants.length; k++) {
          const i = (k + rep) % variants.length;
          const variant = variants[i]!;
          const project = projects[i]!;
          const db = command.fresh ? join(project, `up-${rep}.db`) : psDb;
          const out = await runChild([BUN, ...variant.entry, ...command.args(project, db)], project, {}, timeout);
          if (out.code !== 0 || !command.check(out.stdout))
            throw new Error(`${command.label} from ${variant.name}: exit ${out.code}: ${out.stderr || out.stdout}`);
          add(`${command.label}|${variant.name}`, out.elapsedMs);
          addCpu(`${command.label}|${variant.name}`, out.cpuMs);
        }
      }
    }
    const count = new Database(psDb, { readonly: true });
    const stored = count.query<{ n: number }, []>("SELECT count(*) AS n FROM _smithers_runs").get()!.n;
    count.close();
    // The fastest of the repetitions beside the median: on a shared machine the median moves with the load, the fastest much less.
    const floor = median(samples.get("floor")!);
    const floorFastest = Math.min(...samples.get("floor")!);
    const cell = (xs: number[]) =>
      `${fmtMs(median(xs))} (${(median(xs) / floor).toFixed(1)}x); fastest ${fmtMs(Math.min(...xs))} (${(Math.min(...xs) / floorFastest).toFixed(1)}x)`;
    const rows = COMMANDS.map((c) => [c.label, ...variants.map((v) => cell(samples.get(`${c.label}|${v.name}`)!))]);
    rows.push(["imports floor: bun + zod + drizzle", ...variants.map(() => cell(samples.get("floor")!))]);
    console.log(
      `\nbench/cli: whole processes, spawn to exit: median ms (÷ the floor's median); fastest ms (÷ the floor's fastest), of ${reps} (Bun ${Bun.version}, ${navigator.hardwareConcurrency} cores; ps database: ${stored.toLocaleString("en-US")} runs)\n`,
    );
    console.log(markdownTable(["command", ...variants.map((v) => `from ${v.name}`)], rows));
    // CPU time (user + system) moves far less with other load on the machine than the wall clock.
    const floorCpu = median(cpu.get("floor")!);
    const cpuCell = (xs: number[]) => `${fmtMs(median(xs))} (${(median(xs) / floorCpu).toFixed(1)}x)`;
    const cpuRows = COMMANDS.map((c) => [c.label, ...variants.map((v) => cpuCell(cpu.get(`${c.label}|${v.name}`)!))]);
    cpuRows.push(["imports floor: bun + zod + drizzle", ...variants.map(() => cpuCell(cpu.get("floor")!))]);
    console.log(`\nThe same processes' CPU time (user + system): median ms (÷ the floor's median)\n`);
    console.log(markdownTable(["command", ...variants.map((v) => `from ${v.name}`)], cpuRows));
  } finally {
    rmSync(dir, { recursive: true, force: true });
    if (!hadBundle) rmSync(BUNDLE_DIR, { recursive: true, force: true });
  }
}

if (import.meta.main) await runCliBench(process.argv.slice(2));
