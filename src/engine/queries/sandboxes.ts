/** A run's sandbox sessions, for `smithers sandboxes` and GET /runs/:id/sandboxes. */
import type { SandboxSession } from "../../contract/index.ts";
import { sandboxes, type SmithersDb } from "../../db/index.ts";

function policyOf(configJson: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(configJson);
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** The run's sessions by node, iteration and attempt (a session of another kind, without them, last). */
export async function sandboxSessions(db: SmithersDb, runId: string): Promise<SandboxSession[]> {
  const rows = await sandboxes.listSandboxes(db, runId);
  const sessions = rows.map(
    (r): SandboxSession => ({
      sandboxId: r.sandboxId,
      nodeId: r.nodeId,
      iteration: r.iteration,
      attempt: r.attempt,
      runtime: r.runtime,
      policy: policyOf(r.configJson),
      status: r.status,
      rootDir: r.rootDir,
      pid: r.pid,
      startedAtMs: r.startedAtMs,
      completedAtMs: r.completedAtMs,
      exitCode: r.exitCode,
      error: r.errorText,
    }),
  );
  const key = (s: SandboxSession) => [s.nodeId ?? "\uffff", s.iteration ?? 0, s.attempt ?? 0] as const;
  return sessions.sort((a, b) => {
    const [an, ai, aa] = key(a);
    const [bn, bi, ba] = key(b);
    return an < bn ? -1 : an > bn ? 1 : ai - bi || aa - ba;
  });
}
