/**
 * bench/cold: where the time of a cold run goes (the first run in a fresh process, on a new
 * database) next to a warm one (the same workflow run once before in the process). Each sample is
 * a fresh process (child.tsx) with performance.now() marks; cold and warm alternate; medians.
 *
 *   bun run bench/cold/index.ts [--reps 9] [--shape one] [--n 1] [--from src,bundle]
 *
 * --from: how the process loads Smithers, as an installed project does (a scratch project whose
 * node_modules links `smithers-workflows` to this checkout, the child imports it by that name):
 * `src` (the sources, as `bun test` or a checkout runs them) and `bundle` (dist/bundle under
 * `--conditions=smithers-bundle`, as the `smithers` command runs it: one file and its bytecode,
 * built by scripts/build-bundle.ts for the run when it is missing). Forms alternate too.
 *
 * Phases inside runWorkflow are cut at the engine's database turns (SqliteDb read / write /
 * withTransaction by label, wrapped from outside): "JS before X" is the engine's own work
 * between the previous turn and X (rendering, scheduling, validation, first execution of its
 * code); "X" is the turn itself (its statements, their preparation and the JS inside it).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { BUNDLE_CONDITION, BUNDLE_CORE, BUNDLE_DIR, buildBundle } from "../../scripts/build-bundle.ts";
import { markdownTable } from "../markdown-table.ts";

const HERE = import.meta.dir;
const ROOT = join(HERE, "..", "..");
type Turn = { label: string; start: number; end: number; cpuStart: number; cpuEnd: number };
type Sql = { prepareMs: number; execMs: number; statements: number };
type Result = {
  processStartToScript: number;
  importsMs: number;
  importsCpuMs: number;
  createMs: number;
  openMs: number;
  openSql: Sql;
  runStart: number;
  runEnd: number;
  runCpuStart: number;
  runCpuEnd: number;
  runSql: Sql;
  turns: Turn[];
};

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: { reps: { type: "string" }, shape: { type: "string" }, n: { type: "string" }, from: { type: "string" } },
});
const reps = Number(values.reps ?? 9);
const shape = values.shape ?? "one";
const n = Number(values.n ?? 1);
type Form = "src" | "bundle";
const forms = (values.from ?? "src,bundle").split(",") as Form[];
if (!forms.length || forms.some((f) => f !== "src" && f !== "bundle")) throw new Error("--from takes src, bundle or both (src,bundle)");

const hadBundle = existsSync(join(BUNDLE_DIR, BUNDLE_CORE));
if (forms.includes("bundle") && !hadBundle) await buildBundle();
const project = mkdtempSync(join(tmpdir(), "smithers-cold-project-"));
process.on("exit", () => {
  rmSync(project, { recursive: true, force: true });
  if (!hadBundle) rmSync(BUNDLE_DIR, { recursive: true, force: true });
});
// The child as a user's file: it imports `smithers-workflows` (and its JSX runtime) and `zod` by
// name, from node_modules links (child.tsx itself names src/ by path, so it type-checks here).
mkdirSync(join(project, "node_modules"));
symlinkSync(ROOT, join(project, "node_modules", "smithers-workflows"), "dir");
symlinkSync(join(ROOT, "node_modules", "zod"), join(project, "node_modules", "zod"), "dir");
writeFileSync(
  join(project, "child.tsx"),
  readFileSync(join(HERE, "child.tsx"), "utf8")
    .replace("@jsxImportSource ../../src/jsx", "@jsxImportSource smithers-workflows")
    .replace('import("../../src/index.ts")', 'import("smithers-workflows")')
    .replace('import("../zod.ts")', 'import("zod")'),
);

function runChild(warm: boolean, form: Form): Result {
  const dir = mkdtempSync(join(tmpdir(), "smithers-cold-"));
  try {
    const spec = { shape, n, dbPath: join(dir, "bench.db"), warm };
    const conditions = form === "bundle" ? [`--conditions=${BUNDLE_CONDITION}`] : [];
    const p = Bun.spawnSync([process.execPath, ...conditions, join(project, "child.tsx"), JSON.stringify(spec)], { cwd: project, stderr: "pipe" });
    const line = p.stdout
      .toString()
      .split("\n")
      .find((l) => l.startsWith("COLD_RESULT "));
    if (p.exitCode !== 0 || !line) throw new Error(`child failed (exit ${p.exitCode}): ${p.stderr.toString().slice(0, 500)}`);
    return JSON.parse(line.slice("COLD_RESULT ".length)) as Result;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

type Clock = "wall" | "cpu";

/** The run cut into named segments (summed when a label repeats), in order of first appearance, on either clock. */
function segments(r: Result, clock: Clock): Map<string, number> {
  const out = new Map<string, number>();
  const add = (k: string, ms: number) => out.set(k, (out.get(k) ?? 0) + ms);
  const startOf = (t: Turn) => (clock === "wall" ? t.start : t.cpuStart);
  const endOf = (t: Turn) => (clock === "wall" ? t.end : t.cpuEnd);
  let at = clock === "wall" ? r.runStart : r.runCpuStart;
  let wallAt = r.runStart;
  const turns = [...r.turns].filter((t) => t.start > 0).sort((a, b) => a.start - b.start);
  for (const t of turns) {
    if (t.start < wallAt) continue; // a turn inside another (none on SQLite: a read inside a transaction runs in it)
    add(`JS before ${t.label}`, startOf(t) - at);
    add(`${t.label} (turn)`, endOf(t) - startOf(t));
    at = endOf(t);
    wallAt = t.end;
  }
  add("JS after the last turn (end of run)", (clock === "wall" ? r.runEnd : r.runCpuEnd) - at);
  return out;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

type Kind = "cold" | "warm";
const samples = new Map<string, Result[]>();
const key = (form: Form, kind: Kind) => `${form} ${kind}`;
for (let i = 0; i < reps; i++) {
  // Rotate both the form and the kind that goes first, so neither always runs on a machine another just warmed.
  const order = forms.flatMap((form) => (["cold", "warm"] as const).map((kind) => ({ form, kind })));
  for (let k = 0; k < order.length; k++) {
    const { form, kind } = order[(k + i) % order.length]!;
    samples.set(key(form, kind), [...(samples.get(key(form, kind)) ?? []), runChild(kind === "warm", form)]);
  }
  process.stderr.write(".");
}
process.stderr.write("\n");

const rows: string[][] = [];
const columns = forms.flatMap((form) => (["cold", "warm"] as const).map((kind) => ({ form, kind })));
const fmt = (x: number) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
/** A row: each column's median on the wall clock, then on the CPU clock where `cpu` gives it. */
const row = (name: string, f: (r: Result) => number, cpu?: (r: Result) => number) =>
  rows.push([
    name,
    ...columns.map((c) => fmt(median(samples.get(key(c.form, c.kind))!.map(f)))),
    ...columns.map((c) => (cpu ? fmt(median(samples.get(key(c.form, c.kind))!.map(cpu))) : "")),
  ]);
row("process start to script (bun)", (r) => r.processStartToScript);
row(
  "imports (smithers-workflows + zod)",
  (r) => r.importsMs,
  (r) => r.importsCpuMs,
);
row("createSmithers + smithers()", (r) => r.createMs);
row("open a new database (pragmas, internal + output tables)", (r) => r.openMs);
row("  of which SQLite executing", (r) => r.openSql.execMs);
row("  statements", (r) => r.openSql.statements);
rows.push(["**runWorkflow (bench/compare's wall)**", ...columns.flatMap(() => ["", ""])]);
const names = new Set<string>();
for (const r of [...samples.values()].flat()) for (const k of segments(r, "wall").keys()) names.add(k);
for (const name of names)
  row(
    `  ${name}`,
    (r) => segments(r, "wall").get(name) ?? 0,
    (r) => segments(r, "cpu").get(name) ?? 0,
  );
row(
  "  **total**",
  (r) => r.runEnd - r.runStart,
  (r) => r.runCpuEnd - r.runCpuStart,
);
row("  of which SQLite preparing", (r) => r.runSql.prepareMs);
row("  of which SQLite executing", (r) => r.runSql.execMs);
row("  statements executed", (r) => r.runSql.statements);
console.log(`\nbench/cold: ${shape}-${n}, medians of ${reps} fresh processes each (Bun ${Bun.version}, ${navigator.hardwareConcurrency} cores)\n`);
const heads = (clock: string) => columns.map((c) => `${c.form} ${c.kind} ${clock}`);
console.log(markdownTable(["phase", ...heads("ms"), ...heads("CPU ms")], rows));
console.log(
  "\ncold: the first run in the process; warm: the same workflow run once before on a scratch database (then a new database opened and timed)." +
    "\nsrc: smithers-workflows from its sources; bundle: from dist/bundle (--conditions=smithers-bundle, as the smithers command loads it)." +
    "\nCPU ms: the process's user + system time over the same marks (process.cpuUsage, microsecond resolution): less moved by other load on the machine than wall time.",
);
