/** `smithers scores <run> [--node ID] [--json]`: the scorer rows of a run per attempt, then a summary per scorer. */
import { parseArgs } from "./parse-args.ts";
import type { RunScoresReport } from "../contract/index.ts";
import { runScores } from "../engine/queries/index.ts";
import { alignRows, EXIT, openExistingDb, usageError, type Io } from "./shared.ts";

const ms = (v: number | null) => (v === null ? "-" : `${v}ms`);
const num = (v: number | null) => (v === null ? "-" : String(Math.round(v * 1000) / 1000));

/** One line per attempt and scorer, then one per scorer with its scored count, mean, min and max, pending and failed. */
export function formatScores(report: RunScoresReport): string[] {
  if (report.scores.length === 0) return [`run ${report.runId} has no scores`];
  const rows = alignRows([
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
  const summary = alignRows([
    ["SCORER", "SCORED", "MEAN", "MIN", "MAX", "PENDING", "ERRORS"],
    ...report.summary.map((s) => [s.scorerId, String(s.scored), num(s.mean), num(s.min), num(s.max), String(s.pending), String(s.errors)]),
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
