/**
 * bench/compare: the same workflows on our engine and on the peer (npm smithers-orchestrator),
 * every measurement in a fresh child process, alternating ours/peer, several repetitions; prints a
 * table of medians with ours/peer ratios. See bench/README.md.
 *
 *   bun run bench/compare/index.ts [--reps 3] [--n 10,100,1000,10000] [--only ours|peer]
 *                                  [--workflows one,seq,par,loop,up,floor,rest,scale] [--quick]
 *                                  [--timeout 600] [--peer-max-n 1000] [--ours-ref GIT_REF] [--ours-from src|bundle]
 *                                  [--json FILE] [--no-install]
 *
 * `rest` is a second table, ours only: `smithers ps`, a supervise pass and a new run beside N waiting
 * and 5N finished runs, for each N of --n from 1,000 up (rest.ts). `scale` is a third, ours only:
 * seq-10000, par-10000 and the resume of a 10,000-task run with 9,999 finished, wall time and peak
 * RSS against a 120 MB budget (scale.ts).
 *
 * Ours is the working tree's src/ by default; --ours-ref HEAD (or any commit) measures that commit's
 * src/ instead, exported to a temporary directory, so edits in progress cannot break or skew a run.
 * The rows that run the `smithers` command (`up`, and `rest`'s whole-process rows) run it as the
 * packed package's bin does: the tree's bundle (built by its scripts/build-bundle.ts for the run,
 * and removed again from the working tree) under the smithers-bundle condition, the workflow file in
 * a project whose node_modules links smithers-workflows and zod; src/ only for a commit without the
 * bundle script (the heading says which). --ours-from bundle runs the shape rows (one, seq, par,
 * loop) that way too: the worker as a script in such a project, importing smithers-workflows by
 * name under the smithers-bundle condition, so it runs the bundle, as a script of a project that
 * installed the packed package does (ours-project.ts); the default, src, imports src/ by path.
 */
import { Database } from "bun:sqlite";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { markdownTable } from "../markdown-table.ts";
import { RESULT_PREFIX, type ChildReport, type RunSpec, type Shape } from "./protocol.ts";
import { measureRestRows, planRestRows, REST_MIN_N, renderRestTable } from "./rest.ts";
import { measureScaleRows, planScaleRows, renderScaleTable, RSS_BUDGET_MB } from "./scale.ts";
import { BUNDLE_CONDITION } from "../../scripts/build-bundle.ts";
import { BENCH_DIR, BUN, firstLine, fmtInt, fmtMs, HERE, median, oursCommand, PEER_CLI, PEER_PKG, ROOT, runChild, WORK_DIR, type OursTree } from "./spawn.ts";
import { bundleWorker } from "./ours-project.ts";
import { linkTo, upFile } from "./up-file.ts";

type Engine = "ours" | "peer";
type WorkflowName = Shape | "up" | "floor" | "rest" | "scale";
/** Rows measured without being a --workflows choice: the import floor beside `floor`'s bun:sqlite rows. */
type RowKind = WorkflowName | "imports";
/**
 * How a row's run differs from the plain one (ours only, with `floor`): `warm`, timed as the second
 * run of its workflow in its process; `no-jit`, with JavaScriptCore's JIT off (BUN_JSC_useJIT=0).
 */
type Variant = "warm" | "no-jit";
const WORKFLOWS: readonly WorkflowName[] = ["one", "seq", "par", "loop", "up", "floor", "rest", "scale"];
/** Rows that run one of the engine's workflows in a child of its own (ours.tsx / peer.jsx). */
const SHAPE_ROWS: readonly RowKind[] = ["one", "seq", "par", "loop"];
const UP_TASKS = 5;
const FLOOR_NS = [1_000, 10_000];

export type CompareOptions = {
  reps: number;
  ns: number[];
  engines: Engine[];
  workflows: WorkflowName[];
  timeoutMs: number;
  peerMaxN: number;
  json?: string;
  install: boolean;
  oursRef?: string;
  /** Where the shape rows load our engine from: src/ by path, or the tree's bundle as an installed project's script. */
  oursFrom: "src" | "bundle";
};

type Ok = { ok: true; wallMs: number; rssMb: number; db: { main: number; wal: number; shm: number }; framesBytes: number | null; statements?: number };
type Failed = { ok: false; kind: "error" | "timeout"; message: string };
type Sample = Ok | Failed;

/**
 * One table row: a workflow at one size; `ours` holds the floor's samples on floor rows.
 * `statements`: what ours executed, from a counted run of its own (not among the timed samples).
 */
type Row = { label: string; workflow: RowKind; n: number; variant?: Variant; cells: Partial<Record<Engine, Sample[] | "skip">>; statements?: number[] };

// ---------------------------------------------------------------------------------------------
// options

export function parseCompareArgs(argv: string[]): CompareOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      reps: { type: "string" },
      n: { type: "string" },
      only: { type: "string" },
      workflows: { type: "string" },
      quick: { type: "boolean" },
      timeout: { type: "string" },
      "peer-max-n": { type: "string" },
      json: { type: "string" },
      "no-install": { type: "boolean" },
      "ours-ref": { type: "string" },
      "ours-from": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.log(readFileSync(import.meta.path, "utf8").split("*/")[0]);
    process.exit(0);
  }
  const list = (s: string) =>
    s
      .split(",")
      .map((x) => x.trim())
      .filter(Boolean);
  const quick = values.quick === true;
  const ns = values.n ? list(values.n).map(Number) : quick ? [10, 100, 1_000] : [10, 100, 1_000, 10_000];
  if (ns.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`--n wants positive integers, got ${values.n}`);
  const engines = (values.only ? [values.only] : ["ours", "peer"]) as Engine[];
  if (engines.some((e) => e !== "ours" && e !== "peer")) throw new Error(`--only wants ours or peer, got ${values.only}`);
  // --quick stays under 1,000 tasks: no scale rows unless asked for.
  const workflows = (values.workflows ? list(values.workflows) : WORKFLOWS.filter((w) => !(quick && w === "scale"))) as WorkflowName[];
  const unknown = workflows.filter((w) => !WORKFLOWS.includes(w));
  if (unknown.length) throw new Error(`unknown workflow(s) ${unknown.join(",")}; known: ${WORKFLOWS.join(",")}`);
  const reps = Number(values.reps ?? (quick ? 1 : 3));
  if (!Number.isInteger(reps) || reps < 1) throw new Error(`--reps wants a positive integer, got ${values.reps}`);
  const positive = (flag: string, given: string | undefined, fallback: number) => {
    const x = given === undefined ? fallback : Number(given);
    if (given !== undefined && (given.trim() === "" || !Number.isFinite(x) || x <= 0)) throw new Error(`--${flag} wants a positive number, got ${given}`);
    return x;
  };
  const oursFrom = values["ours-from"] ?? "src";
  if (oursFrom !== "src" && oursFrom !== "bundle") throw new Error(`--ours-from wants src or bundle, got ${oursFrom}`);
  const timeoutS = positive("timeout", values.timeout, 600);
  const peerMaxN = positive("peer-max-n", values["peer-max-n"], 1_000);
  // A selection that measures nothing would print an empty report: say why instead.
  const mainRows = workflows.some((w) => w !== "rest" && w !== "scale" && (w !== "floor" || engines.includes("ours")));
  const restRows = workflows.includes("rest") && engines.includes("ours") && ns.some((n) => n >= REST_MIN_N);
  const scaleRows = workflows.includes("scale") && engines.includes("ours");
  if (!mainRows && !restRows && !scaleRows) {
    const why = workflows.includes("rest")
      ? `rest is measured on ours only, at N of ${fmtInt(REST_MIN_N)} and up (engines: ${engines.join(" and ")}; --n ${ns.join(",")})`
      : "floor and scale are measured on ours only";
    throw new Error(`--workflows ${workflows.join(",")} measures nothing: ${why}`);
  }
  return {
    reps,
    ns: [...new Set(ns)].sort((a, b) => a - b),
    engines,
    workflows,
    timeoutMs: timeoutS * 1_000,
    peerMaxN,
    json: values.json,
    install: values["no-install"] !== true,
    oursRef: values["ours-ref"],
    oursFrom,
  };
}

// ---------------------------------------------------------------------------------------------
// the peer's install

function wantedPeerVersion(): string {
  const pkg = JSON.parse(readFileSync(join(BENCH_DIR, "package.json"), "utf8"));
  return pkg.dependencies["smithers-orchestrator"];
}

function peerInstalled(): boolean {
  return existsSync(PEER_PKG) && JSON.parse(readFileSync(PEER_PKG, "utf8")).version === wantedPeerVersion();
}

/** True when the peer is (now) installed. Installs it with `npm install --prefix bench` if allowed. */
export async function ensurePeer(install: boolean): Promise<boolean> {
  if (peerInstalled()) return true;
  const how = "npm install --prefix bench";
  if (!install) {
    console.log(
      `bench/compare: the peer (smithers-orchestrator@${wantedPeerVersion()}) is not installed; run \`${how}\` to compare against it. Measuring ours only.`,
    );
    return false;
  }
  console.log(`bench/compare: the peer (smithers-orchestrator@${wantedPeerVersion()}) is not installed; installing it now with \`${how}\` (about a minute)…`);
  const proc = Bun.spawn(["npm", "install", "--prefix", BENCH_DIR, "--no-audit", "--no-fund", "--loglevel=error"], {
    cwd: ROOT,
    stdout: "inherit",
    stderr: "inherit",
  });
  const code = await proc.exited;
  if (code === 0 && peerInstalled()) return true;
  console.log(`bench/compare: \`${how}\` failed (exit ${code}); measuring ours only. Run it by hand to see why.`);
  return false;
}

function fileSize(path: string): number {
  return existsSync(path) ? statSync(path).size : 0;
}

/** Row count of the output table and bytes of frame XML, read after the child exited (sizes first: opening may add files). */
function inspectDb(dbPath: string): { db: Ok["db"]; rows: number; framesBytes: number | null } {
  const db = { main: fileSize(dbPath), wal: fileSize(`${dbPath}-wal`), shm: fileSize(`${dbPath}-shm`) };
  const sqlite = new Database(dbPath, { readonly: true });
  try {
    const has = (t: string) => sqlite.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(t) !== null;
    const rows = has("out") ? (sqlite.query("SELECT COUNT(*) AS c FROM out").get() as { c: number }).c : 0;
    const framesBytes = has("_smithers_frames")
      ? (sqlite.query("SELECT COALESCE(SUM(length(CAST(xml_json AS BLOB))), 0) AS b FROM _smithers_frames").get() as { b: number }).b
      : null;
    return { db, rows, framesBytes };
  } finally {
    sqlite.close();
  }
}

async function measure(
  engine: Engine | "floor",
  workflow: RowKind,
  n: number,
  opts: CompareOptions,
  ours: OursTree,
  variant?: Variant,
  count = false,
): Promise<Sample> {
  const dir = mkdtempSync(join(tmpdir(), "smithers-compare-"));
  const dbPath = join(dir, "bench.db");
  const rssFile = join(dir, "peak-rss-kb");
  try {
    let cmd: string[];
    let env: Record<string, string> = {};
    const wholeProcess = workflow === "up" || workflow === "imports";
    if (wholeProcess) {
      const file = workflow === "up" ? upFile(engine as Engine, ours, UP_TASKS) : "";
      const cli =
        workflow === "imports"
          ? [join(HERE, "imports-floor.ts")]
          : engine === "ours"
            ? [...oursCommand(ours), "up", file, "--db", dbPath]
            : [PEER_CLI, "up", file];
      cmd = [BUN, "--preload", join(HERE, "rss-probe.ts"), ...cli];
      env = { BENCH_DB: dbPath, BENCH_RSS_FILE: rssFile };
    } else {
      const fromBundle = engine === "ours" && opts.oursFrom === "bundle";
      const worker =
        engine === "floor"
          ? join(HERE, "floor.ts")
          : engine === "ours"
            ? fromBundle
              ? bundleWorker(ours)
              : join(ours.root, "bench/compare/ours.tsx")
            : join(HERE, "peer.jsx");
      const spec: RunSpec = {
        shape: (workflow === "floor" ? "seq" : workflow) as Shape,
        n,
        dbPath,
        ...(variant === "warm" ? { warm: true } : {}),
        ...(count ? { count: true } : {}),
      };
      cmd = [BUN, ...(fromBundle ? [`--conditions=${BUNDLE_CONDITION}`] : []), worker, JSON.stringify(spec)];
      if (variant === "no-jit") env = { BUN_JSC_useJIT: "0" };
    }
    const out = await runChild(cmd, dir, env, opts.timeoutMs);
    if (out.timedOut) return { ok: false, kind: "timeout", message: `killed after ${opts.timeoutMs / 1000} s` };
    if (out.code !== 0) return { ok: false, kind: "error", message: `exit ${out.code}: ${firstLine(out.stderr || out.stdout)}` };
    let wallMs: number;
    let rssMb: number;
    let statements: number | undefined;
    if (wholeProcess) {
      wallMs = out.elapsedMs; // the whole process, spawn to exit
      rssMb = existsSync(rssFile) ? Number(readFileSync(rssFile, "utf8")) / 1024 : Number.NaN;
    } else {
      const line = out.stdout.split("\n").find((l) => l.startsWith(RESULT_PREFIX));
      if (!line) return { ok: false, kind: "error", message: `no result line: ${firstLine(out.stderr || out.stdout)}` };
      const r = JSON.parse(line.slice(RESULT_PREFIX.length)) as ChildReport;
      wallMs = r.wallMs;
      rssMb = r.peakRssKb / 1024;
      statements = r.statements;
    }
    if (workflow === "imports") return { ok: true, wallMs, rssMb, db: { main: 0, wal: 0, shm: 0 }, framesBytes: null };
    const seen = inspectDb(dbPath);
    if (seen.rows !== n) return { ok: false, kind: "error", message: `finished but wrote ${seen.rows} rows to "out", expected ${n}` };
    return { ok: true, wallMs, rssMb, db: seen.db, framesBytes: seen.framesBytes, ...(statements === undefined ? {} : { statements }) };
  } catch (e) {
    return { ok: false, kind: "error", message: (e as Error).message };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// --ours-ref: a commit's src/ next to the current bench worker

function git(...args: string[]): string {
  const r = Bun.spawnSync(["git", ...args], { cwd: ROOT, stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr.toString().trim()}`);
  return r.stdout.toString().trim();
}

/** The commit our engine is measured at, and whether src/ had uncommitted changes. */
function gitState(): string {
  try {
    const head = git("rev-parse", "--short", "HEAD");
    return git("status", "--porcelain", "--", "src") ? `${head} + uncommitted src/ changes` : head;
  } catch {
    return "no git";
  }
}

/**
 * The bundle of the tree at `root` built by its own scripts/build-bundle.ts (what `npm pack` ships and
 * the `smithers` bin runs); false when the tree has no such script (a commit from before the bundle).
 * The working tree's is built afresh for every run (one left from earlier may be older than its
 * sources) and removed again at exit unless one was there before; an exported commit's is built once.
 */
function ensureBundle(root: string): boolean {
  const had = existsSync(join(root, "dist", "bundle", "smithers.js"));
  if (had && root !== ROOT) return true;
  if (!existsSync(join(root, "scripts", "build-bundle.ts"))) return false;
  const built = Bun.spawnSync([BUN, join(root, "scripts", "build-bundle.ts")], { cwd: root, stderr: "pipe", stdout: "pipe" });
  if (built.exitCode !== 0) throw new Error(`building the bundle of ${root}: ${built.stderr.toString().trim()}`);
  if (root === ROOT && !had) process.on("exit", () => rmSync(join(ROOT, "dist", "bundle"), { recursive: true, force: true }));
  return true;
}

/** The CLI rows' form and the shape rows', for the table's heading. */
function formOf(bundled: boolean, cliRows: boolean, shapesFromBundle: boolean): string {
  const forms = [
    ...(cliRows ? [bundled ? "CLI rows from its bundle" : "CLI rows from src/: no bundle script"] : []),
    shapesFromBundle ? "shape rows from its bundle, as an installed project's script" : "shape rows from src/",
  ];
  return forms.join(", ");
}

/** The tree measured; its bundle built when the CLI rows run it or `shapesFromBundle` (which then requires one). */
function oursTree(ref: string | undefined, cliRows: boolean, shapesFromBundle: boolean): OursTree {
  const bundleOf = (root: string) => {
    const bundled = (cliRows || shapesFromBundle) && ensureBundle(root);
    if (shapesFromBundle && !bundled) throw new Error(`--ours-from bundle: ${ref ?? "the working tree"} has no scripts/build-bundle.ts to build one with`);
    return bundled;
  };
  if (ref === undefined) {
    const bundled = bundleOf(ROOT);
    return { root: ROOT, label: `working tree at ${gitState()}, ${formOf(bundled, cliRows, shapesFromBundle)}`, bundled };
  }
  const sha = git("rev-parse", "--verify", `${ref}^{commit}`).slice(0, 12);
  const root = join(WORK_DIR, `ours-${sha}`);
  // A marker of the whole export (earlier versions of this bench exported src/ alone).
  const exported = join(root, ".exported");
  if (!existsSync(exported)) {
    rmSync(root, { recursive: true, force: true });
    mkdirSync(root, { recursive: true });
    // scripts/ and templates/ too: the bundle of that commit is built by its own script.
    const tar = Bun.spawnSync(
      ["sh", "-c", `git archive --format=tar ${sha} src package.json tsconfig.json $(git ls-tree --name-only ${sha} scripts templates) | tar -x -C '${root}'`],
      {
        cwd: ROOT,
        stderr: "pipe",
      },
    );
    if (tar.exitCode !== 0) throw new Error(`exporting ${sha}: ${tar.stderr.toString().trim()}`);
    writeFileSync(exported, `${sha}\n`);
  }
  linkTo(join(root, "node_modules"), join(ROOT, "node_modules"));
  // The current worker and its helpers, so any commit's engine runs the same workflows.
  mkdirSync(join(root, "bench", "compare"), { recursive: true });
  for (const f of ["zod.ts", "idle-runs.ts", "statement-counter.ts", "shape-workflows.tsx"]) copyFileSync(join(BENCH_DIR, f), join(root, "bench", f));
  for (const f of ["ours.tsx", "protocol.ts", "rest-child.tsx", "scale-child.tsx"]) copyFileSync(join(HERE, f), join(root, "bench", "compare", f));
  const bundled = bundleOf(root);
  return { root, label: `${sha} (--ours-ref ${ref}), ${formOf(bundled, cliRows, shapesFromBundle)}`, bundled };
}

// ---------------------------------------------------------------------------------------------
// the plan

function plan(opts: CompareOptions, peerAvailable: boolean): Row[] {
  const rows: Row[] = [];
  const engineCells = (n: number): Row["cells"] => {
    const cells: Row["cells"] = {};
    for (const e of opts.engines) {
      if (e === "peer" && (!peerAvailable || n > opts.peerMaxN)) cells.peer = "skip";
      else cells[e] = [];
    }
    return cells;
  };
  const want = (w: WorkflowName) => opts.workflows.includes(w);
  if (want("one")) rows.push({ label: "one task", workflow: "one", n: 1, cells: engineCells(1) });
  for (const shape of ["seq", "par", "loop"] as const) {
    if (!want(shape)) continue;
    for (const n of opts.ns) rows.push({ label: `${shape}-${n}`, workflow: shape, n, cells: engineCells(n) });
  }
  if (want("up")) rows.push({ label: `smithers up (${UP_TASKS} tasks)`, workflow: "up", n: UP_TASKS, cells: engineCells(UP_TASKS) });
  if (want("floor") && opts.engines.includes("ours")) {
    for (const n of FLOOR_NS.filter((n) => opts.ns.includes(n))) {
      rows.push({ label: `floor-${n} (bun:sqlite)`, workflow: "floor", n, cells: { ours: [] } });
    }
    // What the engine costs once its code is compiled: the run again in a process that has run
    // the same workflow once (one task, and each shape at 1,000); what the JIT costs in memory:
    // seq at the largest N with it off; and a process that only imports zod and Drizzle, the
    // part of `smithers up` no engine can skip (the workflow file imports both).
    rows.push({ label: "one task, warm (2nd run in process)", workflow: "one", n: 1, variant: "warm", cells: { ours: [] } });
    if (opts.ns.includes(1_000))
      for (const shape of ["seq", "par", "loop"] as const)
        rows.push({ label: `${shape}-1000, warm (2nd run in process)`, workflow: shape, n: 1_000, variant: "warm", cells: { ours: [] } });
    const largest = Math.max(...opts.ns.filter((n) => n >= 1_000));
    if (Number.isFinite(largest))
      rows.push({ label: `seq-${largest}, JIT off (BUN_JSC_useJIT=0)`, workflow: "seq", n: largest, variant: "no-jit", cells: { ours: [] } });
    rows.push({ label: "floor: bun + zod + drizzle imports (whole process)", workflow: "imports", n: 1, cells: { ours: [] } });
  }
  return rows;
}

// ---------------------------------------------------------------------------------------------
// the table

type Summary = { wallMs: number; rssMb: number; dbBytes: number; framesBytes: number | null } | { failed: "error" | "timeout" } | "skip" | undefined;

function summarize(cell: Sample[] | "skip" | undefined): Summary {
  if (cell === undefined || cell === "skip") return cell;
  const failed = cell.find((s): s is Failed => !s.ok);
  if (failed) return { failed: failed.kind };
  const ok = cell as Ok[];
  if (ok.length === 0) return undefined;
  const frames = ok.map((s) => s.framesBytes).filter((b): b is number => b !== null);
  return {
    wallMs: median(ok.map((s) => s.wallMs)),
    rssMb: median(ok.map((s) => s.rssMb)),
    dbBytes: median(ok.map((s) => s.db.main + s.db.wal + s.db.shm)),
    framesBytes: frames.length ? median(frames) : null,
  };
}

const fmtKb = (bytes: number) => (bytes >= 10 * 1024 ? fmtInt(bytes / 1024) : (bytes / 1024).toFixed(1));
const fmtRatio = (a: number, b: number) => {
  const r = a / b;
  return `${r >= 10 ? r.toFixed(0) : r >= 1 ? r.toFixed(1) : r.toPrecision(2)}x`;
};

export function renderTable(rows: Row[]): string {
  const header = [
    "workflow",
    "tasks",
    "wall ms ours",
    "wall ms peer",
    "wall ours/peer",
    "ms/task ours",
    "ms/task peer",
    "stmts/task ours",
    "DB KB ours",
    "DB KB peer",
    "DB ours/peer",
    "frames KB ours",
    "frames KB peer",
    "RSS MB ours",
    "RSS MB peer",
    "RSS ours/peer",
  ];
  const lines: string[][] = [];
  for (const row of rows) {
    const o = summarize(row.cells.ours);
    const p = summarize(row.cells.peer);
    const val = (s: Summary, f: (x: Exclude<Summary, "skip" | undefined | { failed: unknown }>) => string) =>
      s === undefined || s === "skip" ? "—" : "failed" in s ? s.failed : f(s);
    const ratio = (f: (x: { wallMs: number; rssMb: number; dbBytes: number }) => number) =>
      o && p && o !== "skip" && p !== "skip" && !("failed" in o) && !("failed" in p) ? fmtRatio(f(o), f(p)) : "—";
    lines.push([
      row.label,
      fmtInt(row.n),
      val(o, (s) => fmtMs(s.wallMs)),
      val(p, (s) => fmtMs(s.wallMs)),
      ratio((s) => s.wallMs),
      val(o, (s) => fmtMs(s.wallMs / row.n)),
      val(p, (s) => fmtMs(s.wallMs / row.n)),
      row.statements?.length ? (median(row.statements) / row.n).toFixed(row.n === 1 ? 0 : 2) : "—",
      val(o, (s) => fmtKb(s.dbBytes)),
      val(p, (s) => fmtKb(s.dbBytes)),
      ratio((s) => s.dbBytes),
      val(o, (s) => (s.framesBytes === null ? "—" : fmtKb(s.framesBytes))),
      val(p, (s) => (s.framesBytes === null ? "—" : fmtKb(s.framesBytes))),
      val(o, (s) => s.rssMb.toFixed(0)),
      val(p, (s) => s.rssMb.toFixed(0)),
      ratio((s) => s.rssMb),
    ]);
  }
  return markdownTable(header, lines);
}

// ---------------------------------------------------------------------------------------------
// main

export async function runCompareBench(argv: string[] = []): Promise<void> {
  const opts = parseCompareArgs(argv);
  const benchStarted = performance.now();
  // The rows that run the `smithers` command run it as an installed package does: from its bundle.
  const cliRows = opts.engines.includes("ours") && (opts.workflows.includes("up") || (opts.workflows.includes("rest") && opts.ns.some((n) => n >= REST_MIN_N)));
  const shapesFromBundle = opts.oursFrom === "bundle" && opts.engines.includes("ours") && opts.workflows.some((w) => SHAPE_ROWS.includes(w));
  const ours = oursTree(opts.oursRef, cliRows, shapesFromBundle);
  const peerAvailable = opts.engines.includes("peer") ? await ensurePeer(opts.install) : false;
  const rows = plan(opts, peerAvailable);
  const jobs: { row: Row; engine: Engine; rep: number; count?: boolean }[] = [];
  for (const row of rows) {
    const engines = (Object.keys(row.cells) as Engine[]).filter((e) => row.cells[e] !== "skip");
    for (let rep = 0; rep < opts.reps; rep++) {
      // Alternate which engine goes first, so neither always runs on a machine the other just warmed.
      for (const e of rep % 2 === 0 ? engines : [...engines].reverse()) jobs.push({ row, engine: e, rep });
    }
    // Ours' statements, counted in a run of its own (rows of the engine's workflows, not floor/warm/no-jit rows).
    if (engines.includes("ours") && SHAPE_ROWS.includes(row.workflow) && row.variant === undefined) {
      row.statements = [];
      jobs.push({ row, engine: "ours", rep: -1, count: true });
    }
  }
  console.log(
    `\nbench/compare: ${jobs.length} runs, each in a fresh process (${opts.reps} rep${opts.reps > 1 ? "s" : ""}, timeout ${opts.timeoutMs / 1000} s per run)`,
  );
  const notes: string[] = [];
  for (const [i, job] of jobs.entries()) {
    const runner = job.row.workflow === "floor" || job.row.workflow === "imports" ? "floor" : job.engine;
    const sample = await measure(runner, job.row.workflow, job.row.n, opts, ours, job.row.variant, job.count);
    if (!job.count) (job.row.cells[job.engine] as Sample[]).push(sample);
    else if (sample.ok && sample.statements !== undefined) job.row.statements!.push(sample.statements);
    const what = `${job.row.label} ${runner} ${job.count ? "statements counted" : `rep ${job.rep + 1}/${opts.reps}`}`;
    const said = sample.ok
      ? `${fmtMs(sample.wallMs)} ms, RSS ${sample.rssMb.toFixed(0)} MB, DB ${fmtKb(sample.db.main + sample.db.wal + sample.db.shm)} KB`
      : `${sample.kind}: ${sample.message}`;
    console.error(`  [${i + 1}/${jobs.length}] ${what}: ${said}`);
    if (!sample.ok) notes.push(`${what}: ${sample.kind}: ${sample.message}`);
  }
  const wantScale = opts.workflows.includes("scale") && opts.engines.includes("ours");
  if (jobs.length === 0 && !((opts.workflows.includes("rest") || wantScale) && opts.engines.includes("ours")))
    throw new Error(`nothing to measure: every cell of --workflows ${opts.workflows.join(",")} is skipped (the peer not installed, or N above --peer-max-n)`);
  const restRows = opts.workflows.includes("rest") && opts.engines.includes("ours") ? planRestRows(opts.ns) : [];
  const scaleRows = wantScale ? planScaleRows() : [];
  const writeJson = (totalSeconds: number) => {
    if (opts.json) writeFileSync(opts.json, JSON.stringify({ bun: Bun.version, options: opts, totalSeconds, rows, restRows, scaleRows }, null, 2));
  };
  const seconds = () => (performance.now() - benchStarted) / 1000;
  console.log(
    `\nbench/compare: medians of ${opts.reps} run${opts.reps > 1 ? "s" : ""} per cell (Bun ${Bun.version}, ${process.platform}/${process.arch}, ` +
      `${navigator.hardwareConcurrency} cores; ours: ${ours.label}; peer smithers-orchestrator@${peerAvailable ? wantedPeerVersion() : "-"})\n`,
  );
  if (rows.length) console.log(renderTable(rows));
  if (rows.length)
    console.log(
      "\nwall: inside the child, around runWorkflow only (after imports and workflow creation); `smithers up`: the whole process, spawn to exit," +
        "\n  run as the installed package's bin runs it: bun --conditions=smithers-bundle dist/bundle/smithers.js, the workflow importing smithers-workflows by name." +
        "\nstmts/task: SQL statements ours executed per task, BEGIN and COMMIT included, counted in one more run of its own (bench/statement-counter.ts)." +
        "\nDB: main file + -wal + -shm, read by the parent after the child exited. frames: SUM(length(xml_json)) over _smithers_frames." +
        "\nRSS: the child's own peak (VmHWM). floor rows: plain bun:sqlite, one committed INSERT per task, shown in the ours columns;" +
        "\nwarm rows: the same workflow run once on a scratch database first, then timed (RSS covers both runs). JIT off: the same run interpreted only." +
        "\nimports floor: `bun` importing zod and Drizzle's SQLite core, spawn to exit, with the same preload as the `smithers up` row." +
        `\n— : not measured (the peer above N=${fmtInt(opts.peerMaxN)}, or not selected).`,
    );
  for (const n of notes) console.log(`  ! ${n}`);
  // The main table is out (and in --json) before the rest rows are measured: nothing they do can lose it.
  writeJson(seconds());
  if (opts.workflows.includes("rest") && opts.engines.includes("ours") && restRows.length === 0)
    console.log(`\nbench/compare: no rest rows: rest is measured at N of ${fmtInt(REST_MIN_N)} and up, and --n is ${opts.ns.join(",")}`);
  if (restRows.length) {
    const restNotes = await measureRestRows(restRows, opts.reps, ours, opts.timeoutMs);
    console.log(`\nRuns at rest (ours only; N from --n, ${fmtInt(REST_MIN_N)} and up): N waiting runs, none due, and 5N finished in the database\n`);
    console.log(renderRestTable(restRows));
    console.log(
      "\nwall: in process, around the one call only (the database opened before, but for the `open` row); whole process: spawn to exit." +
        "\nstatements: every SQL statement the call or the process executed (bench/statement-counter.ts). RSS: the process's peak (VmHWM).",
    );
    for (const n of restNotes) console.log(`  ! ${n}`);
  }
  if (scaleRows.length) {
    const scaleNotes = await measureScaleRows(scaleRows, opts.reps, ours, opts.timeoutMs);
    console.log(`\nAt scale (ours only): 10,000 tasks, medians of ${opts.reps}; budget ${RSS_BUDGET_MB} MB of peak RSS each\n`);
    console.log(renderScaleTable(scaleRows));
    console.log(
      "\nwall: inside the child, around runWorkflow only (resume: the resume call, in a fresh process, of a copy of one built run)." +
        "\nRSS: the child's own peak (VmHWM), imports and all.",
    );
    for (const n of scaleNotes) console.log(`  ! ${n}`);
  }
  const totalS = seconds();
  console.log(`\nbench/compare: total ${totalS >= 120 ? `${(totalS / 60).toFixed(1)} min` : `${totalS.toFixed(totalS < 10 ? 1 : 0)} s`}`);
  if (opts.json) {
    writeJson(totalS);
    console.log(`bench/compare: raw samples written to ${opts.json}`);
  }
}

if (import.meta.main) {
  try {
    await runCompareBench(process.argv.slice(2));
  } catch (e) {
    console.error(`bench/compare: ${(e as Error).message}`);
    process.exit(1);
  }
}
