/**
 * `smithers eval <workflow.tsx> --cases FILE.jsonl`: runs the workflow once per case (each its own
 * run on the workflow's database), grades each run against the case's `expected` and prints a
 * pass/fail table, with each scorer's mean score per case when the workflow's tasks have scorers.
 * Any failed case ends it with EVAL_FAILED (exit 1), after the table.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "./parse-args.ts";
import type { ScorerSummary } from "../contract/index.ts";
import { loadWorkflowFile, runWorkflow, scoreRowsOfRun, scorerSummaries, type SmithersWorkflow } from "../engine/index.ts";
import { SmithersError } from "../errors/index.ts";
import { type CaseOutcome, type EvalCase, grade, parseCases, REFUSED } from "./eval-cases.ts";
import { alignRows, dbPathOption, EXIT, type Io, positiveInt, type StopSignals, usageError } from "./shared.ts";

/** One case's row of the table (and of --json). */
export type CaseResult = {
  case: string;
  line: number;
  runId: string | null;
  status: string;
  pass: boolean;
  why: string;
  output: unknown;
  scores: ScorerSummary[];
};

/** Runs one case to its end; a start the workflow refuses (input failing its schema) is the case's outcome, not the command's. */
async function runCase(workflow: SmithersWorkflow, c: EvalCase, o: { file: string; dbPath?: string; signals: StopSignals }): Promise<CaseResult> {
  let runId: string | null = null;
  let outcome: CaseOutcome;
  try {
    const result = await runWorkflow(workflow, {
      input: c.input,
      dbPath: o.dbPath,
      workflowPath: o.file,
      signal: o.signals.cancel,
      abandonSignal: o.signals.abandon,
    });
    runId = result.runId;
    outcome = { status: result.status, output: result.output, error: result.error ? `${result.error.code}: ${result.error.message}` : null };
  } catch (error) {
    if (!(error instanceof SmithersError)) throw error;
    outcome = { status: REFUSED, output: undefined, error: `${error.code}: ${error.message}` };
  }
  const { pass, why } = grade(c.expected, outcome);
  const scores = runId === null ? [] : scorerSummaries(await scoreRowsOfRun(workflow.dbFor(o.dbPath), runId));
  return { case: c.label, line: c.line, runId, status: outcome.status, pass, why, output: outcome.output ?? null, scores };
}

/** Runs the cases `concurrency` at a time, results in the file's order; after a cancel no case starts. */
async function runCases(
  workflow: SmithersWorkflow,
  cases: EvalCase[],
  concurrency: number,
  o: { file: string; dbPath?: string; signals: StopSignals },
): Promise<CaseResult[]> {
  const results: CaseResult[] = [];
  let next = 0;
  const lane = async () => {
    while (next < cases.length && !o.signals.cancel.aborted) {
      const i = next++;
      results[i] = await runCase(workflow, cases[i]!, o);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, cases.length) }, lane));
  return results.filter(Boolean);
}

/** `0.750`, `0.750 (1 pending)`, `pending`, `error`: a scorer's cell of a case. */
export function scoreCell(s: ScorerSummary | undefined): string {
  if (!s) return "-";
  const extra = [s.pending > 0 ? `${s.pending} pending` : "", s.errors > 0 ? `${s.errors} error` : ""].filter(Boolean).join(", ");
  if (s.mean === null) return s.pending > 0 ? "pending" : "error";
  return `${s.mean.toFixed(3)}${extra ? ` (${extra})` : ""}`;
}

/** The table: case, run id, status, PASS/FAIL, one column per scorer, why. */
export function caseTable(results: CaseResult[]): string[] {
  const scorers = new Map<string, string>();
  for (const r of results) for (const s of r.scores) scorers.set(s.scorerId, s.scorerName);
  const header = ["case", "run", "status", "result", ...[...scorers.values()], "why"];
  const rows = results.map((r) => [
    r.case,
    r.runId ?? "-",
    r.status,
    r.pass ? "PASS" : "FAIL",
    ...[...scorers.keys()].map((id) => scoreCell(r.scores.find((s) => s.scorerId === id))),
    r.why,
  ]);
  return alignRows([header, ...rows]);
}

export async function evalDatasetCommand(args: string[], io: Io, signals: StopSignals): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { cases: { type: "string" }, concurrency: { type: "string" }, json: { type: "boolean" }, db: { type: "string" } },
  });
  if (positionals.length !== 1) throw usageError("eval takes one workflow file (or: eval compare <run-a> <run-b>)");
  if (values.cases === undefined) throw usageError("eval needs --cases FILE.jsonl");
  const concurrency = positiveInt(values.concurrency, "--concurrency") ?? 1;
  let text: string;
  try {
    text = readFileSync(values.cases, "utf8");
  } catch (cause) {
    throw usageError(`cannot read --cases ${values.cases}: ${(cause as Error).message}`);
  }
  const cases = parseCases(text); // every line checked before any run starts
  const file = resolve(positionals[0]!);
  const workflow = await loadWorkflowFile(file);
  const dbPath = dbPathOption(values.db);
  const results = await runCases(workflow, cases, concurrency, { file, dbPath, signals });
  const failed = results.filter((r) => !r.pass).length;
  if (values.json) io.out(JSON.stringify({ workflow: file, cases: results, passed: results.length - failed, failed }, null, 2));
  else {
    for (const line of caseTable(results)) io.out(line);
    io.out(`${results.length - failed} passed, ${failed} failed`);
  }
  if (signals.cancel.aborted) return EXIT.cancelled;
  if (failed > 0) throw new SmithersError("EVAL_FAILED", `${failed} of ${results.length} case(s) failed`, { failed });
  return EXIT.ok;
}
