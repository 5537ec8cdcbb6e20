/** The `failed attempts:` section of `smithers inspect`: each failed attempt's error and the author's stack frames. */
import type { InspectReport } from "../contract/index.ts";
import { relativeFrame } from "../errors/index.ts";

/** One line per failed attempt, its stack frames under it (paths relative to `cwd`); nothing when no attempt failed. */
export function failedAttemptLines(report: InspectReport, cwd: string = process.cwd()): string[] {
  const lines: string[] = [];
  for (const n of report.nodes) {
    for (const f of n.failedAttempts) {
      lines.push(`  ${n.nodeId} iter=${n.iteration} attempt ${f.attempt}: ${f.error.code ?? ""}: ${f.error.message ?? ""}`);
      for (const frame of f.error.stack ?? []) lines.push(`    ${relativeFrame(frame, cwd)}`);
    }
  }
  return lines.length === 0 ? [] : ["failed attempts:", ...lines];
}
