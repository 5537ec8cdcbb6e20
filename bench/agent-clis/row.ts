/** One row of bench/agent-clis: a CLI at one setting, the wall time of a one-turn workflow task. */
import { markdownTable } from "../markdown-table.ts";

export type CliTurnRow = { cli: string; version: string; setting: string; runs: number; medianMs: number; minMs: number; maxMs: number };

/** What one CLI's bench returns: its rows and notes, or why the real CLI cannot run here. */
export type CliBenchResult = { rows: CliTurnRow[]; notes: string[] } | { skip: string };

/** The rows as a table, then the notes. */
export function printCliRows(results: Array<[string, CliBenchResult]>): void {
  const ms = (n: number) => `${Math.round(n)} ms`;
  const rows = results.flatMap(([, r]) => ("skip" in r ? [] : r.rows));
  console.log(
    markdownTable(
      ["cli, setting", "runs", "median", "min", "max"],
      rows.map((r) => [`${r.cli} ${r.version}, ${r.setting}`, String(r.runs), ms(r.medianMs), ms(r.minMs), ms(r.maxMs)]),
    ),
  );
  for (const [name, r] of results) for (const note of "skip" in r ? [`skipped: ${r.skip}`] : r.notes) console.log(`${name}: ${note}`);
}
