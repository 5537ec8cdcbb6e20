/**
 * bench/compare's `scale` rows, ours only: runs of 10,000 tasks and what they cost in time and in
 * peak memory, against a budget of 120 MB of peak RSS each (issue 36):
 *
 * - seq-10000 and par-10000: the main table's workflows (ours.tsx), each in a fresh process;
 * - resume-10000: a run of 10,000 tasks with 9,999 finished and the last one failed, resumed in a
 *   fresh process (scale-child.tsx); the wall time is the resume call's.
 *
 * The budget column says whether every repetition stayed under it (the largest is shown too).
 */
import { Database } from "bun:sqlite";
import { copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { markdownTable } from "../markdown-table.ts";
import { RESULT_PREFIX, type ChildReport, type RunSpec } from "./protocol.ts";
import type { ScaleSpec } from "./scale-child.tsx";
import { BUN, firstLine, fmtInt, fmtMs, median, runChild, type OursTree } from "./spawn.ts";

export const SCALE_N = 10_000;
export const RSS_BUDGET_MB = 120;

type ScaleKind = "seq" | "par" | "resume";
export type ScaleSample = { ok: true; wallMs: number; rssMb: number } | { ok: false; kind: "error" | "timeout"; message: string };
export type ScaleRow = { label: string; kind: ScaleKind; n: number; samples: ScaleSample[] };

export function planScaleRows(): ScaleRow[] {
  return [
    { label: `seq-${SCALE_N}`, kind: "seq", n: SCALE_N, samples: [] },
    { label: `par-${SCALE_N}`, kind: "par", n: SCALE_N, samples: [] },
    { label: `resume-${SCALE_N} (${fmtInt(SCALE_N - 1)} finished, 1 left)`, kind: "resume", n: SCALE_N, samples: [] },
  ];
}

function outRows(dbPath: string): number {
  const sqlite = new Database(dbPath, { readonly: true });
  try {
    return sqlite.query<{ c: number }, []>("SELECT COUNT(*) AS c FROM out").get()!.c;
  } finally {
    sqlite.close();
  }
}

async function child(cmd: string[], cwd: string, timeoutMs: number): Promise<ScaleSample> {
  const out = await runChild(cmd, cwd, {}, timeoutMs);
  if (out.timedOut) return { ok: false, kind: "timeout", message: `killed after ${timeoutMs / 1000} s` };
  const line = out.stdout.split("\n").find((l) => l.startsWith(RESULT_PREFIX));
  if (out.code !== 0 || !line) return { ok: false, kind: "error", message: `exit ${out.code}: ${firstLine(out.stderr || out.stdout)}` };
  const r = JSON.parse(line.slice(RESULT_PREFIX.length)) as ChildReport;
  return { ok: true, wallMs: r.wallMs, rssMb: r.peakRssKb / 1024 };
}

async function measureOnce(row: ScaleRow, dir: string, template: string | undefined, ours: OursTree, timeoutMs: number): Promise<ScaleSample> {
  const run = mkdtempSync(join(dir, "run-"));
  const dbPath = join(run, "scale.db");
  try {
    let sample: ScaleSample;
    if (row.kind === "resume") {
      if (!template) return { ok: false, kind: "error", message: "the run to resume was not built" };
      for (const suffix of ["", "-wal"]) if (existsSync(template + suffix)) copyFileSync(template + suffix, dbPath + suffix);
      const spec: ScaleSpec = { step: "resume", n: row.n, dbPath };
      sample = await child([BUN, join(ours.root, "bench/compare/scale-child.tsx"), JSON.stringify(spec)], run, timeoutMs);
    } else {
      const spec: RunSpec = { shape: row.kind, n: row.n, dbPath };
      sample = await child([BUN, join(ours.root, "bench/compare/ours.tsx"), JSON.stringify(spec)], run, timeoutMs);
    }
    if (!sample.ok) return sample;
    const rows = outRows(dbPath);
    return rows === row.n ? sample : { ok: false, kind: "error", message: `wrote ${rows} rows to "out", expected ${row.n}` };
  } finally {
    rmSync(run, { recursive: true, force: true });
  }
}

/** Builds the run to resume once, then measures every row `reps` times, rows alternating; returns the failures as notes. */
export async function measureScaleRows(rows: ScaleRow[], reps: number, ours: OursTree, timeoutMs: number): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), "smithers-compare-scale-"));
  const notes: string[] = [];
  try {
    let template: string | undefined = join(dir, "resume-template.db");
    if (rows.some((r) => r.kind === "resume")) {
      const started = performance.now();
      const spec: ScaleSpec = { step: "build", n: SCALE_N, dbPath: template };
      const out = await runChild([BUN, join(ours.root, "bench/compare/scale-child.tsx"), JSON.stringify(spec)], dir, {}, timeoutMs);
      if (out.code === 0) {
        console.error(
          `  scale: built a run of ${fmtInt(SCALE_N)} tasks, ${fmtInt(SCALE_N - 1)} finished, in ${((performance.now() - started) / 1000).toFixed(1)} s`,
        );
      } else {
        notes.push(`scale: building the run to resume: exit ${out.code}: ${firstLine(out.stderr || out.stdout)}`);
        template = undefined;
      }
    }
    let done = 0;
    for (let rep = 0; rep < reps; rep++) {
      for (const row of rows) {
        const sample = await measureOnce(row, dir, template, ours, timeoutMs);
        row.samples.push(sample);
        const what = `${row.label} rep ${rep + 1}/${reps}`;
        console.error(
          `  [scale ${++done}/${rows.length * reps}] ${what}: ${sample.ok ? `${fmtMs(sample.wallMs)} ms, RSS ${sample.rssMb.toFixed(0)} MB` : `${sample.kind}: ${sample.message}`}`,
        );
        if (!sample.ok) notes.push(`${what}: ${sample.kind}: ${sample.message}`);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return notes;
}

export function renderScaleTable(rows: readonly ScaleRow[]): string {
  const header = ["at scale (ours)", "tasks", "wall ms", "ms/task", "peak RSS MB (median)", "peak RSS MB (largest)", `under ${RSS_BUDGET_MB} MB`];
  const lines = rows.map((row) => {
    const failed = row.samples.find((s) => !s.ok);
    const ok = row.samples.filter((s): s is Extract<ScaleSample, { ok: true }> => s.ok);
    if (failed || ok.length === 0) {
      const why = failed && !failed.ok ? failed.kind : "—";
      return [row.label, fmtInt(row.n), why, why, why, why, "—"];
    }
    const wall = median(ok.map((s) => s.wallMs));
    const largest = Math.max(...ok.map((s) => s.rssMb));
    return [
      row.label,
      fmtInt(row.n),
      fmtMs(wall),
      row.kind === "resume" ? "—" : fmtMs(wall / row.n), // a resume runs one task
      median(ok.map((s) => s.rssMb)).toFixed(0),
      largest.toFixed(0),
      largest < RSS_BUDGET_MB ? "yes" : "NO",
    ];
  });
  return markdownTable(header, lines);
}
