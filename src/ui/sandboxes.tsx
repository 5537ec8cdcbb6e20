/**
 * The run page's Sandboxes section: each sandbox session of the run's tasks (node, attempt,
 * policy, status, exit, pid, times) from GET /runs/:id/sandboxes, read again whenever the run's
 * report is (`version`). Nothing is shown for a run without sessions.
 */
import { useEffect, useState } from "preact/hooks";
import { getJson } from "./api.ts";
import { time } from "./format.ts";
import { ErrorNote } from "./shared.tsx";
import type { SandboxList, SandboxSession } from "./types.ts";

/** The policy as the user wrote it, `{}` being the strict defaults. */
function policyText(policy: SandboxSession["policy"]): string {
  const pairs = Object.entries(policy).map(([k, v]) => `${k}: ${String(v)}`);
  return pairs.length === 0 ? "defaults (no network, read-only root)" : pairs.join(", ");
}

export function Sandboxes({ runId, version }: { runId: string; version: unknown }) {
  const [sessions, setSessions] = useState<SandboxSession[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    const abort = new AbortController();
    getJson<SandboxList>(`/runs/${encodeURIComponent(runId)}/sandboxes`, abort.signal)
      .then((list) => {
        setSessions(list.sessions);
        setError(null);
      })
      .catch((e: unknown) => {
        if (!abort.signal.aborted) setError(e);
      });
    return () => abort.abort();
  }, [runId, version]);

  if (error !== null) return <ErrorNote error={error} />;
  if (sessions === null || sessions.length === 0) return null;
  return (
    <section aria-labelledby="sandboxes-title">
      <h2 id="sandboxes-title">Sandboxes</h2>
      <table class="sandboxes" data-testid="sandboxes">
        <thead>
          <tr>
            <th scope="col">Task</th>
            <th scope="col">Attempt</th>
            <th scope="col">Policy</th>
            <th scope="col">Status</th>
            <th scope="col">Exit</th>
            <th scope="col">Pid</th>
            <th scope="col">Started</th>
            <th scope="col">Ended</th>
          </tr>
        </thead>
        <tbody>
          {sessions.map((s) => (
            <tr key={s.sandboxId} data-testid={`sandbox-${s.sandboxId}`}>
              <th scope="row">
                {s.nodeId ?? s.sandboxId}
                {s.iteration ? ` #${s.iteration}` : ""}
              </th>
              <td>{s.attempt ?? "–"}</td>
              <td>{policyText(s.policy)}</td>
              <td title={s.error ?? undefined}>
                {s.status}
                {s.error !== null && <div class="error">{s.error}</div>}
              </td>
              <td>{s.exitCode ?? "–"}</td>
              <td>{s.pid ?? "–"}</td>
              <td>{time(s.startedAtMs)}</td>
              <td>{time(s.completedAtMs)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
