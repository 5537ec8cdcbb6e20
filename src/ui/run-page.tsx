/**
 * One run at `/runs/<id>`: its status, tasks (state, attempts, duration, error, output row), the
 * approvals it waits for, and cancel / resume. Live through the run's server-sent events: each
 * event reloads the report (at most every 250 ms); the stream ends when the run does.
 */
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { followEvents, getJson, postJson } from "./api.ts";
import { duration, runDuration, time, usage } from "./format.ts";
import { linkClick } from "./nav.ts";
import { ErrorNote, StatusBadge } from "./shared.tsx";
import { OVER, type OutputRow, type PendingApproval, type RunReport } from "./types.ts";

const RELOAD_MS = 250;

function useRun(runId: string) {
  const [report, setReport] = useState<RunReport | null>(null);
  const [outputs, setOutputs] = useState<Map<string, OutputRow>>(new Map());
  const [error, setError] = useState<unknown>(null);
  const path = `/runs/${encodeURIComponent(runId)}`;
  const reload = useCallback(async () => {
    try {
      const [r, o] = await Promise.all([getJson<RunReport>(path), getJson<{ outputs: OutputRow[] }>(`${path}/outputs`)]);
      setReport(r);
      setOutputs(new Map(o.outputs.map((x) => [`${x.nodeId}#${x.iteration}`, x])));
      setError(null);
    } catch (e) {
      setError(e);
    }
  }, [path]);

  // A version that follows the stream again after an action (a resume continues the journal).
  const [epoch, setEpoch] = useState(0);
  useEffect(() => {
    const abort = new AbortController();
    let pending: ReturnType<typeof setTimeout> | undefined;
    const soon = () => {
      pending ??= setTimeout(() => {
        pending = undefined;
        void reload();
      }, RELOAD_MS);
    };
    void (async () => {
      await reload();
      let after = -1;
      while (!abort.signal.aborted) {
        try {
          after = await followEvents(runId, after, soon, abort.signal);
          await reload();
          return; // the server ended the stream: the run is over
        } catch {
          if (abort.signal.aborted) return;
          await new Promise((r) => setTimeout(r, 1000)); // dropped: reconnect after the last seq seen
        }
      }
    })();
    return () => {
      abort.abort();
      clearTimeout(pending);
    };
  }, [runId, reload, epoch]);

  const act = async (verb: string, body: unknown = {}) => {
    try {
      await postJson(`${path}/${verb}`, body);
      setError(null);
    } catch (e) {
      setError(e);
    }
    await reload();
    setEpoch((n) => n + 1);
  };
  return { report, outputs, error, act };
}

export function RunPage({ runId }: { runId: string }) {
  const { report, outputs, error, act } = useRun(runId);
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []); // a page change moves focus to its title, as a reload would
  const over = report ? OVER.has(report.status) : true;
  const resumable = report !== null && ["failed", "cancelled", "waiting-approval", "waiting-event", "waiting-timer"].includes(report.status);
  return (
    <section aria-labelledby="run-title">
      <p>
        <a href="/" onClick={linkClick("/")}>
          ← All runs
        </a>
      </p>
      <h1 id="run-title" ref={heading} tabIndex={-1}>
        Run <code>{runId}</code>
      </h1>
      {error !== null && <ErrorNote error={error} />}
      {report && (
        <>
          <dl class="facts">
            <dt>Status</dt>
            <dd data-testid="run-status" aria-live="polite">
              <StatusBadge status={report.status} />
            </dd>
            <dt>Workflow</dt>
            <dd>{report.workflowName ?? report.workflow}</dd>
            <dt>Started</dt>
            <dd>{time(report.startedAtMs)}</dd>
            <dt>Duration</dt>
            <dd>{duration(runDuration(report, Date.now()))}</dd>
            <dt>Usage</dt>
            <dd>{usage(report.usage)}</dd>
            {report.error && (
              <>
                <dt>Error</dt>
                <dd class="error">
                  {report.error.code}: {report.error.message}
                </dd>
              </>
            )}
          </dl>
          <div class="actions">
            <button type="button" disabled={over} onClick={() => void act("cancel")}>
              Cancel run
            </button>
            <button type="button" disabled={!resumable} onClick={() => void act("resume")}>
              Resume run
            </button>
          </div>
          {(report.pendingApprovals ?? []).map((a) => (
            <ApprovalCard
              key={`${a.nodeId}#${a.iteration}`}
              approval={a}
              onDecide={(verb, note) => act(verb, { node: a.nodeId, iteration: a.iteration, ...(note ? { note } : {}) })}
            />
          ))}
          <h2>Tasks</h2>
          {report.nodes.length === 0 ? (
            <p>No tasks yet.</p>
          ) : (
            <table class="tasks">
              <thead>
                <tr>
                  <th scope="col">Task</th>
                  <th scope="col">State</th>
                  <th scope="col">Attempts</th>
                  <th scope="col">Duration</th>
                  <th scope="col">Error</th>
                  <th scope="col">Output</th>
                </tr>
              </thead>
              <tbody>
                {report.nodes.map((n) => {
                  const out = outputs.get(`${n.nodeId}#${n.iteration}`);
                  return (
                    <tr key={`${n.nodeId}#${n.iteration}`} data-task={n.nodeId}>
                      <th scope="row">
                        <code>{n.nodeId}</code>
                        {n.iteration > 0 && <span class="muted"> #{n.iteration}</span>}
                      </th>
                      <td>
                        <StatusBadge status={n.state} />
                      </td>
                      <td>{n.attempts}</td>
                      <td>{duration(n.durationMs)}</td>
                      <td class="error">{n.error ? `${n.error.code ?? ""} ${n.error.message ?? ""}`.trim() : ""}</td>
                      <td>{out ? <code class="output">{JSON.stringify(out.row)}</code> : <span class="muted">–</span>}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          )}
        </>
      )}
    </section>
  );
}

function ApprovalCard({ approval, onDecide }: { approval: PendingApproval; onDecide: (verb: "approve" | "deny", note: string) => Promise<void> }) {
  const [note, setNote] = useState("");
  const [busy, setBusy] = useState(false);
  const id = `note-${approval.nodeId}-${approval.iteration}`;
  const decide = async (verb: "approve" | "deny") => {
    setBusy(true);
    await onDecide(verb, note.trim());
    setBusy(false);
  };
  const simple = approval.request.mode === undefined || approval.request.mode === "gate";
  return (
    <section class="card approval" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Waiting for approval: {approval.request.title ?? approval.nodeId}</h2>
      {approval.request.summary && <p>{approval.request.summary}</p>}
      {simple ? (
        <>
          <label for={id}>Note (optional)</label>
          <textarea id={id} rows={2} value={note} onInput={(e) => setNote(e.currentTarget.value)} />
          <div class="actions">
            <button type="button" class="primary" disabled={busy} onClick={() => void decide("approve")}>
              Approve
            </button>
            <button type="button" disabled={busy} onClick={() => void decide("deny")}>
              Deny
            </button>
          </div>
        </>
      ) : (
        <p>
          This approval asks to {approval.request.mode} among options: decide it with <code>smithers approve</code>.
        </p>
      )}
    </section>
  );
}
