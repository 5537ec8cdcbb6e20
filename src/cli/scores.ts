/** `smithers scores <run> [--node ID] [--json]`: the scorer rows of a run per attempt, then a summary per scorer. */
import { parseArgs } from "node:util";
import type { RunScores } from "../contract/index.ts";
import { runScores } from "../engine/index.ts";
import { EXIT, openExistingDb, usageError, type Io } from "./shared.ts";

const ms = (v: number | null) => (v === null ? "-" : `${v}ms`);
const num = (v: number | null) => (v === null ? "-" : v.toFixed(3).replace(/\.?0+$/, "") || "0");

/** Rows as aligned columns, the last one left ragged. */
function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  "));
}

/** One line per attempt and scorer, then one per scorer with count, mean, min and max of its scores. */
export function formatScores(report: RunScores): string[] {
  if (report.scores.length === 0) return [`run ${report.runId} has no scores`];
  const rows = table([
    ["NODE", "ITER", "ATTEMPT", "SCORER", "STATUS", "SCORE", "LATENCY", "SCORER TIME", "REASON / ERROR"],
    ...report.scores.map((s) => [
      s.nodeId,
      String(s.iteration),
      String(s.attempt),
      s.scorerName === s.scorerId ? s.scorerId : `${s.scorerName} (${s.scorerId})`,
      s.status,
      num(s.score),
      ms(s.latencyMs),
      ms(s.durationMs),
      (s.error ?? s.reason ?? "").replace(/\s+/g, " ").slice(0, 120),
    ]),
  ]);
  const summary = table([
    ["SCORER", "COUNT", "MEAN", "MIN", "MAX", "PENDING", "ERRORS"],
    ...report.summary.map((s) => [s.scorerId, String(s.count), num(s.mean), num(s.min), num(s.max), String(s.pending), String(s.errors)]),
  ]);
  return [...rows, "", ...summary];
}

export async function scoresCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { node: { type: "string" }, json: { type: "boolean" }, db: { type: "string" } },
  });
  const runId = positionals[0];
  if (!runId || positionals.length > 1) throw usageError("scores takes exactly one run id");
  const db = openExistingDb(values.db);
  try {
    const report = await runScores(db, runId, values.node === undefined ? {} : { nodeId: values.node });
    if (values.json) io.out(JSON.stringify(report, null, 2));
    else for (const line of formatScores(report)) io.out(line);
    return EXIT.ok;
  } finally {
    await db.close();
  }
}
