/**
 * bench/compare's `rest` rows: what a database full of runs at rest costs the commands that should
 * not care about them. For each N, one child builds a database with N waiting runs (none due) and
 * 5N finished ones (../idle-runs.ts); every measurement then runs in a fresh process on its own
 * copy of it. Ours only: the peer's schema differs, so the same database cannot be built for it.
 */
import { Database } from "bun:sqlite";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { markdownTable } from "../markdown-table.ts";
import { RESULT_PREFIX } from "./protocol.ts";
import type { RestReport, RestSpec, RestStep } from "./rest-child.tsx";
import { BUN, firstLine, fmtInt, fmtMs, HERE, median, oursCommand, runChild, type OursTree } from "./spawn.ts";
import { upFile } from "./up-file.ts";

/** The smallest N a `rest` row is measured at (of the bench's --n sizes): below it nothing could show growth. */
export const REST_MIN_N = 1_000;
const FINISHED_PER_WAITING = 5;

type Measure = {
  id: string;
  label: string;
  /** In process: the step rest-child.tsx times. Whole process: the CLI's arguments (the bench adds `--db <copy>`) and a check of its stdout. */
  how: { step: Exclude<RestStep, "seed"> } | { cli: (ours: OursTree) => string[]; expect: (stdout: string) => boolean };
  /** The run it starts writes one row to `out`. */
  startsRun: boolean;
};

const MEASURES: Measure[] = [
  { id: "open", label: "open the database (in process)", how: { step: "open" }, startsRun: false },
  {
    id: "ps-cli",
    label: "`smithers ps` (whole process)",
    how: { cli: () => ["ps"], expect: (out) => out.split("\n").filter(Boolean).length === 21 },
    startsRun: false,
  },
  { id: "ps", label: "ps: listRunSummaries (in process)", how: { step: "ps" }, startsRun: false },
  {
    id: "supervise-cli",
    label: "`smithers supervise`, nothing due (whole process)",
    how: { cli: () => ["supervise"], expect: (out) => out.includes("no stale runs, no due waits, no due cron slots") },
    startsRun: false,
  },
  { id: "supervise", label: "supervise() pass, nothing due (in process)", how: { step: "supervise" }, startsRun: false },
  {
    id: "up-cli",
    label: "`smithers up`, 1 task (whole process)",
    how: { cli: (ours) => ["up", upFile("ours", ours, 1)], expect: () => true },
    startsRun: true,
  },
  { id: "run", label: "runWorkflow, 1 task (in process)", how: { step: "run" }, startsRun: true },
];

export type RestSample = { ok: true; wallMs: number; statements: number; rssMb: number } | { ok: false; kind: "error" | "timeout"; message: string };
export type RestRow = { label: string; measure: string; waiting: number; finished: number; samples: RestSample[] };

export function planRestRows(ns: readonly number[]): RestRow[] {
  const sizes = ns.filter((n) => n >= REST_MIN_N);
  return MEASURES.flatMap((m) => sizes.map((n) => ({ label: m.label, measure: m.id, waiting: n, finished: FINISHED_PER_WAITING * n, samples: [] })));
}

/** Builds the database with `waiting` + `finished` runs at `dbPath`, in a child of our engine. */
async function seed(ours: OursTree, dbPath: string, waiting: number, timeoutMs: number): Promise<void> {
  const spec: RestSpec = { step: "seed", dbPath, waiting, finished: FINISHED_PER_WAITING * waiting };
  const out = await runChild([BUN, join(ours.root, "bench/compare/rest-child.tsx"), JSON.stringify(spec)], tmpdir(), {}, timeoutMs);
  if (out.code !== 0) throw new Error(`seeding ${waiting} waiting runs: exit ${out.code}: ${firstLine(out.stderr || out.stdout)}`);
}

/** Runs and `out` rows in the database after a measurement: nothing may change but the one new run. */
function check(dbPath: string, row: RestRow, m: Measure): string | undefined {
  const sqlite = new Database(dbPath, { readonly: true });
  try {
    const runsNow = sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM _smithers_runs").get()!.n;
    const expected = row.waiting + row.finished + (m.startsRun ? 1 : 0);
    if (runsNow !== expected) return `${runsNow} runs after, expected ${expected}`;
    if (!m.startsRun) return undefined;
    const finished = sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM _smithers_runs WHERE status = 'finished'").get()!.n;
    return finished === row.finished + 1 ? undefined : `the new run did not finish (${finished} finished runs)`;
  } finally {
    sqlite.close();
  }
}

async function measureOnce(row: RestRow, template: string, ours: OursTree, timeoutMs: number): Promise<RestSample> {
  const m = MEASURES.find((x) => x.id === row.measure)!;
  const dir = mkdtempSync(join(tmpdir(), "smithers-compare-rest-"));
  const dbPath = join(dir, "rest.db");
  for (const suffix of ["", "-wal"]) if (existsSync(template + suffix)) copyFileSync(template + suffix, dbPath + suffix);
  try {
    let sample: RestSample;
    if ("step" in m.how) {
      const spec: RestSpec = { step: m.how.step, dbPath, waiting: row.waiting, finished: row.finished };
      const out = await runChild([BUN, join(ours.root, "bench/compare/rest-child.tsx"), JSON.stringify(spec)], dir, {}, timeoutMs);
      if (out.timedOut) return { ok: false, kind: "timeout", message: `killed after ${timeoutMs / 1000} s` };
      const line = out.stdout.split("\n").find((l) => l.startsWith(RESULT_PREFIX));
      if (out.code !== 0 || !line) return { ok: false, kind: "error", message: `exit ${out.code}: ${firstLine(out.stderr || out.stdout)}` };
      const r = JSON.parse(line.slice(RESULT_PREFIX.length)) as RestReport;
      sample = { ok: true, wallMs: r.wallMs, statements: r.statements, rssMb: r.peakRssKb / 1024 };
    } else {
      const rssFile = join(dir, "peak-rss-kb");
      const statementsFile = join(dir, "statements");
      const cmd = [BUN, "--preload", join(HERE, "rss-probe.ts"), ...oursCommand(ours), ...m.how.cli(ours), "--db", dbPath];
      const out = await runChild(cmd, dir, { BENCH_RSS_FILE: rssFile, BENCH_STATEMENTS_FILE: statementsFile }, timeoutMs);
      if (out.timedOut) return { ok: false, kind: "timeout", message: `killed after ${timeoutMs / 1000} s` };
      if (out.code !== 0 || !m.how.expect(out.stdout)) return { ok: false, kind: "error", message: `exit ${out.code}: ${firstLine(out.stderr || out.stdout)}` };
      const read = (f: string) => (existsSync(f) ? Number(readFileSync(f, "utf8")) : Number.NaN);
      sample = { ok: true, wallMs: out.elapsedMs, statements: read(statementsFile), rssMb: read(rssFile) / 1024 };
    }
    const wrong = check(dbPath, row, m);
    return wrong ? { ok: false, kind: "error", message: wrong } : sample;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Every row `reps` times (one database built per N first); returns the failures as notes. */
export async function measureRestRows(rows: RestRow[], reps: number, ours: OursTree, timeoutMs: number): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), "smithers-compare-rest-seed-"));
  const notes: string[] = [];
  try {
    const templates = new Map<number, string>();
    for (const n of new Set(rows.map((r) => r.waiting))) {
      const path = join(dir, `rest-${n}.db`);
      const started = performance.now();
      try {
        await seed(ours, path, n, timeoutMs);
      } catch (e) {
        // Its rows are shown failed and the other sizes still measured.
        const message = (e as Error).message;
        console.error(`  rest: ${message}`);
        notes.push(`rest: ${message}`);
        for (const row of rows) if (row.waiting === n) row.samples.push({ ok: false, kind: "error", message });
        continue;
      }
      console.error(
        `  rest: built ${n.toLocaleString("en-US")} waiting + ${(FINISHED_PER_WAITING * n).toLocaleString("en-US")} finished runs in ${((performance.now() - started) / 1000).toFixed(1)} s`,
      );
      templates.set(n, path);
    }
    let done = 0;
    for (let rep = 0; rep < reps; rep++) {
      for (const row of rows) {
        if (!templates.has(row.waiting)) continue;
        const sample = await measureOnce(row, templates.get(row.waiting)!, ours, timeoutMs);
        row.samples.push(sample);
        const what = `${row.label} at ${row.waiting.toLocaleString("en-US")} waiting, rep ${rep + 1}/${reps}`;
        const said = sample.ok ? `${fmtMs(sample.wallMs)} ms, ${sample.statements} statements` : `${sample.kind}: ${sample.message}`;
        console.error(`  [rest ${++done}/${rows.length * reps}] ${what}: ${said}`);
        if (!sample.ok) notes.push(`${what}: ${sample.kind}: ${sample.message}`);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return notes;
}

export function renderRestTable(rows: readonly RestRow[]): string {
  const header = ["at rest", "waiting runs", "finished runs", "wall ms ours", "wall ms peer", "statements ours", "RSS MB ours"];
  const lines = rows.map((row) => {
    const failed = row.samples.find((s) => !s.ok);
    const ok = row.samples.filter((s): s is Extract<RestSample, { ok: true }> => s.ok);
    const cell = (f: (s: (typeof ok)[number]) => number, fmt: (x: number) => string) => (failed ? failed.kind : ok.length ? fmt(median(ok.map(f))) : "—");
    return [
      row.label,
      fmtInt(row.waiting),
      fmtInt(row.finished),
      cell((s) => s.wallMs, fmtMs),
      "—",
      cell((s) => s.statements, fmtInt),
      cell(
        (s) => s.rssMb,
        (x) => x.toFixed(0),
      ),
    ];
  });
  return markdownTable(header, lines);
}
