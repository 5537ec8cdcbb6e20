/**
 * `smithers eval compare <run-a> <run-b> [--json]`: two runs (typically a run and its fork with
 * another model or prompt) task by task: status, outputs side by side, each scorer's score in A and
 * B with the change, tokens, cost and time; tasks only one run has, and a totals block.
 */
import { parseArgs } from "./parse-args.ts";
import { type CompareSide, type RunComparison, scoreDelta, scoreText, type Usage } from "../contract/index.ts";
import { compareRuns } from "../engine/queries/index.ts";
import { compactRow } from "./inspect.ts";
import { EXIT, type Io, openExistingDb, usageError } from "./shared.ts";

const pair = (a: string, b: string) => `${a} | ${b}`;
const tokens = (u: Usage | null | undefined) => (u ? String(u.inputTokens + u.outputTokens) : "-");
const cost = (u: Usage | null | undefined) => (u?.costUsd == null ? "-" : `$${u.costUsd.toFixed(4)}`);

function usageLine(a: CompareSide | null, b: CompareSide | null): string {
  const time = (s: CompareSide | null) => (s ? `${s.durationMs} ms` : "-");
  const attempts = (s: CompareSide | null) => (s ? String(s.attempts) : "-");
  return `  tokens ${pair(tokens(a?.usage), tokens(b?.usage))}, cost ${pair(cost(a?.usage), cost(b?.usage))}, time ${pair(time(a), time(b))}, attempts ${pair(attempts(a), attempts(b))}`;
}

function sideLines(label: "A" | "B", s: CompareSide | null): string[] {
  if (!s) return [];
  const lines: string[] = [];
  if (s.output) lines.push(`  output ${label} ${compactRow(s.output)}`);
  if (s.error) lines.push(`  error ${label} ${s.error.code ?? ""}: ${s.error.message ?? ""}`);
  return lines;
}

/** The human view of a comparison. */
export function comparisonText(c: RunComparison): string[] {
  const head = (t: RunComparison["a"]) => `${t.runId} (${t.workflowName}, ${t.status})`;
  const lines = [`compare A ${head(c.a)} with B ${head(c.b)}`, ...c.warnings.map((w) => `warning: ${w}`)];
  for (const t of c.tasks) {
    const state =
      t.presence === "both" ? `A ${t.a!.state} | B ${t.b!.state}` : t.presence === "only-a" ? `only in A (${t.a!.state})` : `only in B (${t.b!.state})`;
    lines.push(`task ${t.nodeId} iter=${t.iteration}: ${state}`);
    lines.push(...sideLines("A", t.a), ...sideLines("B", t.b), usageLine(t.a, t.b));
    for (const s of t.scores) lines.push(`  score ${s.scorerName}: ${pair(scoreText(s.a), scoreText(s.b))}${scoreDelta(s.delta)}`);
  }
  const { a, b } = c;
  const runTime = (ms: number | null) => (ms === null ? "-" : `${ms} ms`);
  lines.push(
    "totals: A | B",
    `  tasks ${pair(String(a.tasks), String(b.tasks))} (finished ${pair(String(a.finished), String(b.finished))})`,
    `  tokens ${pair(tokens(a.usage), tokens(b.usage))}, cost ${pair(cost(a.usage), cost(b.usage))}`,
    `  task time ${pair(`${a.taskDurationMs} ms`, `${b.taskDurationMs} ms`)}, run time ${pair(runTime(a.runDurationMs), runTime(b.runDurationMs))}`,
  );
  const mean = (m: number | null) => (m === null ? "-" : m.toFixed(3));
  for (const m of c.scoreMeans) lines.push(`  mean ${m.scorerName}: ${pair(mean(m.a), mean(m.b))}${scoreDelta(m.delta)}`);
  return lines;
}

export async function evalCompareCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { json: { type: "boolean" }, db: { type: "string" } } });
  if (positionals.length !== 2) throw usageError("eval compare takes two run ids");
  const db = openExistingDb(values.db);
  try {
    const comparison = await compareRuns(db, positionals[0]!, positionals[1]!);
    if (values.json) io.out(JSON.stringify(comparison, null, 2));
    else for (const line of comparisonText(comparison)) io.out(line);
    return EXIT.ok;
  } finally {
    await db.close();
  }
}
