/**
 * bench/cli: what a `smithers` process costs from spawn to exit, run from src/ (a checkout, or a
 * package packed without its bundle) and from the bundle `npm pack` builds (scripts/build-bundle.ts),
 * beside the imports floor (../compare/imports-floor.ts: a Bun process that imports zod and Drizzle's
 * SQLite core and exits).
 * Commands: `--help`, `up` of a 5-task workflow on a new database, and `ps` on a database of
 * 10,000 finished runs. Every measurement is a fresh process; the variants alternate; medians.
 *
 *   bun run bench/cli/index.ts [--reps 15] [--runs 10000]
 *
 * The workflow file imports `smithers-workflows` by name, from a scratch project whose
 * node_modules links to this checkout, as an installed project's does: from the bundle, under
 * `--conditions=smithers-bundle`, that name is the bundle too (one module instance).
 * The bundle is built into dist/bundle for the run and removed after it, unless one was there.
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

type Variant = "src" | "bundle";
type Command = { label: string; args: (project: string, dbPath: string) => string[]; fresh: boolean; check: (stdout: string) => boolean };

function scratchProject(): string {
  const dir = mkdtempSync(join(tmpdir(), "smithers-bench-cli-"));
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(ROOT, join(dir, "node_modules", "smithers-workflows"), "dir");
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

function entry(variant: Variant): string[] {
  return variant === "bundle" ? [`--conditions=${BUNDLE_CONDITION}`, join(BUNDLE_DIR, BUNDLE_CLI)] : [join(ROOT, "src", "cli", "index.ts")];
}

export async function runCliBench(argv: string[] = []): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { reps: { type: "string" }, runs: { type: "string" } } });
  const reps = Number(values.reps ?? 15);
  const runs = Number(values.runs ?? 10_000);
  const hadBundle = existsSync(join(BUNDLE_DIR, BUNDLE_CLI));
  if (!hadBundle) await buildBundle();
  const project = scratchProject();
  try {
    const psDb = join(project, "ps.db");
    const seeded = new SqliteDb(psDb);
    insertIdleRuns(seeded.sqlite, 0, runs, Date.now());
    await seeded.close();
    const samples = new Map<string, number[]>();
    const add = (key: string, ms: number) => samples.set(key, [...(samples.get(key) ?? []), ms]);
    const timeout = 60_000;
    for (let rep = 0; rep < reps; rep++) {
      const floor = await runChild([BUN, join(ROOT, "bench", "compare", "imports-floor.ts")], project, {}, timeout);
      if (floor.code !== 0) throw new Error(`the imports floor failed: ${floor.stderr}`);
      add("floor", floor.elapsedMs);
      for (const command of COMMANDS) {
        // Alternate which variant goes first, so neither always runs on a machine the other just warmed.
        for (const variant of (rep % 2 === 0 ? ["src", "bundle"] : ["bundle", "src"]) as Variant[]) {
          const db = command.fresh ? join(project, `up-${rep}-${variant}.db`) : psDb;
          const out = await runChild([BUN, ...entry(variant), ...command.args(project, db)], project, {}, timeout);
          if (out.code !== 0 || !command.check(out.stdout)) throw new Error(`${command.label} from ${variant}: exit ${out.code}: ${out.stderr || out.stdout}`);
          add(`${command.label}|${variant}`, out.elapsedMs);
        }
      }
    }
    const count = new Database(psDb, { readonly: true });
    const stored = count.query<{ n: number }, []>("SELECT count(*) AS n FROM _smithers_runs").get()!.n;
    count.close();
    const floor = median(samples.get("floor")!);
    const rows = COMMANDS.map((c) => {
      const src = median(samples.get(`${c.label}|src`)!);
      const bundle = median(samples.get(`${c.label}|bundle`)!);
      return [c.label, fmtMs(src), fmtMs(bundle), `${(bundle / src).toFixed(2)}x`, `${(src / floor).toFixed(1)}x`, `${(bundle / floor).toFixed(1)}x`];
    });
    rows.push(["imports floor: bun + zod + drizzle", fmtMs(floor), "", "", "1.0x", "1.0x"]);
    console.log(
      `\nbench/cli: whole processes, spawn to exit, medians of ${reps} (Bun ${Bun.version}, ${navigator.hardwareConcurrency} cores; ps database: ${stored.toLocaleString("en-US")} runs)\n`,
    );
    console.log(markdownTable(["command", "ms from src/", "ms from the bundle", "bundle/src", "src ÷ floor", "bundle ÷ floor"], rows));
  } finally {
    rmSync(project, { recursive: true, force: true });
    if (!hadBundle) rmSync(BUNDLE_DIR, { recursive: true, force: true });
  }
}

if (import.meta.main) await runCliBench(process.argv.slice(2));
