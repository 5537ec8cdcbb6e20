/** `smithers sandboxes <run-id> [--json] [--db PATH]`: a run's sandbox sessions, one line each. */
import { parseArgs } from "./parse-args.ts";
import type { SandboxSession } from "../contract/index.ts";
import { runs } from "../db/index.ts";
import { sandboxSessions } from "../engine/queries/index.ts";
import { SmithersError } from "../errors/index.ts";
import { alignRows, EXIT, openExistingDb, usageError, type Io } from "./shared.ts";

const iso = (ms: number | null) => (ms === null ? "-" : new Date(ms).toISOString());

/** The policy as `key=value` pairs (`-`: the defaults, nothing granted and no limit). */
export function policyText(policy: Record<string, unknown>): string {
  const pairs = Object.entries(policy).map(([k, v]) => `${k}=${String(v)}`);
  return pairs.length === 0 ? "-" : pairs.join(",");
}

/** The sessions as an aligned table, a header first; a failure's or abandonment's reason on the line below its session. */
export function formatSandboxTable(sessions: readonly SandboxSession[]): string[] {
  const rows = [
    ["NODE", "ITER", "ATTEMPT", "STATUS", "EXIT", "PID", "POLICY", "STARTED", "ENDED", "ROOT"],
    ...sessions.map((s) => [
      s.nodeId ?? s.sandboxId,
      String(s.iteration ?? "-"),
      String(s.attempt ?? "-"),
      s.status,
      s.exitCode === null ? "-" : String(s.exitCode),
      s.pid === null ? "-" : String(s.pid),
      policyText(s.policy),
      iso(s.startedAtMs),
      iso(s.completedAtMs),
      s.rootDir ?? "-",
    ]),
  ];
  const lines = alignRows(rows);
  return [lines[0]!, ...sessions.flatMap((s, i) => [lines[i + 1]!, ...(s.error === null ? [] : [`  ${s.error}`])])];
}

export async function sandboxesCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { json: { type: "boolean" }, db: { type: "string" } } });
  if (positionals.length !== 1) throw usageError("sandboxes takes one run id: smithers sandboxes <run-id>");
  const runId = positionals[0]!;
  const db = openExistingDb(values.db);
  try {
    if (!(await runs.getRun(db, runId))) throw new SmithersError("RUN_NOT_FOUND", `No run "${runId}" in ${db.path}`, { runId });
    const sessions = await sandboxSessions(db, runId);
    if (values.json) io.out(JSON.stringify(sessions, null, 2));
    else if (sessions.length === 0) io.out(`run ${runId} has no sandbox sessions`);
    else for (const line of formatSandboxTable(sessions)) io.out(line);
    return EXIT.ok;
  } finally {
    await db.close();
  }
}
