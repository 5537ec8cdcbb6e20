/**
 * The runs list: newest first, filtered by status and workflow (kept in the URL's query so a
 * filtered view can be linked). Live over GET /runs/stream (server-sent `runs` events: the whole
 * filtered list each time it changes); while that stream is down, GET /runs is polled every
 * second and the stream is tried again. Under the list, the runs over time (runs-over-time.tsx).
 */
import { useEffect, useState } from "preact/hooks";
import { getJson, postJson, readEvents } from "./api.ts";
import { duration, runDuration, time, usage } from "./format.ts";
import { linkClick, navigate, useQueryParam } from "./nav.ts";
import { RunsOverTime } from "./runs-over-time.tsx";
import { ColumnHeads, ErrorNote, FilterSelect, StatusBadge } from "./shared.tsx";
import { progressText, RUN_STATUSES, type RunListItem } from "./types.ts";

const POLL_MS = 1000;

export function RunsList() {
  const [status, setStatus] = useQueryParam("status");
  const [workflow, setWorkflow] = useQueryParam("workflow");
  const [runs, setRuns] = useState<RunListItem[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [now, setNow] = useState(Date.now());
  const [live, setLive] = useState(false);

  useEffect(() => {
    const abort = new AbortController();
    const query = new URLSearchParams({ ...(status ? { status } : {}), ...(workflow ? { workflow } : {}) }).toString();
    const suffix = query ? `?${query}` : "";
    const show = (list: RunListItem[]) => {
      setRuns(list);
      setError(null);
      setNow(Date.now());
    };
    void (async () => {
      while (!abort.signal.aborted) {
        try {
          await readEvents(
            `/runs/stream${suffix}`,
            (m) => {
              if (m.type !== "runs") return;
              setLive(true);
              show((JSON.parse(m.data) as { runs: RunListItem[] }).runs);
            },
            abort.signal,
          );
        } catch (e) {
          if (abort.signal.aborted) return;
          setError(e);
        }
        // The stream dropped (or was refused): poll once a second until it is back.
        setLive(false);
        await new Promise((r) => setTimeout(r, POLL_MS));
        if (abort.signal.aborted) return;
        try {
          show((await getJson<{ runs: RunListItem[] }>(`/runs${suffix}`, abort.signal)).runs);
        } catch (e) {
          if (!abort.signal.aborted) setError(e);
        }
      }
    })();
    return () => abort.abort();
  }, [status, workflow]);

  const workflows = [...new Set((runs ?? []).map((r) => r.workflow))].sort();
  return (
    <section aria-labelledby="runs-title">
      <h1 id="runs-title">Runs</h1>
      <p class="muted" data-testid="live-mode">
        {live ? "Live: the list follows the server's stream of run changes." : "Polling every second (the live stream is not connected)."}
      </p>
      <StartRun />
      <form class="filters" aria-label="Filter runs" onSubmit={(e) => e.preventDefault()}>
        <FilterSelect id="runs-status-label" label="Status" value={status} options={RUN_STATUSES} onChange={setStatus} />
        <label>
          Workflow
          <input type="search" list="workflow-names" value={workflow} placeholder="any" onChange={(e) => setWorkflow(e.currentTarget.value.trim())} />
        </label>
        <datalist id="workflow-names">
          {workflows.map((w) => (
            <option key={w} value={w} />
          ))}
        </datalist>
      </form>
      {error !== null && <ErrorNote error={error} />}
      {runs === null ? (
        <p>Loading…</p>
      ) : runs.length === 0 ? (
        <p>No runs{status || workflow ? " match these filters" : " yet"}.</p>
      ) : (
        <table class="runs">
          <caption class="visually-hidden">Runs, newest first, {live ? "updated live" : "updated every second"}</caption>
          <ColumnHeads names={["Run", "Status", "Workflow", "Started", "Duration", "Progress", "Usage"]} />
          <tbody>
            {runs.map((r) => (
              <tr key={r.runId} data-run={r.runId}>
                <th scope="row">
                  <a href={`/runs/${encodeURIComponent(r.runId)}`} onClick={linkClick(`/runs/${encodeURIComponent(r.runId)}`)}>
                    <code>{r.runId.slice(0, 8)}</code>
                  </a>
                </th>
                <td>
                  <StatusBadge status={r.status} />
                </td>
                <td>{r.workflow}</td>
                <td>{time(r.startedAtMs ?? null)}</td>
                <td>{duration(runDuration(r, now))}</td>
                <td>
                  {r.progress ? (
                    <span class={r.progress.failed > 0 ? "progress progress-failed" : "progress"}>
                      <progress
                        max={Math.max(r.progress.total, 1)}
                        value={r.progress.done}
                        aria-label={`${r.progress.done} of ${r.progress.total} tasks done${r.progress.failed > 0 ? `, ${r.progress.failed} failed` : ""}`}
                      />
                      {progressText(r.progress)}
                    </span>
                  ) : (
                    "–"
                  )}
                </td>
                <td>{usage(r.usage)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {runs !== null && ( // once the list loaded: a refused token is asked for once, by the list
        <section class="card" aria-labelledby="over-time-title">
          <h2 id="over-time-title">Runs over time</h2>
          <RunsOverTime version={runs} />
        </section>
      )}
    </section>
  );
}

/** Starts a run of a registered workflow (POST /runs), then opens its page. */
function StartRun() {
  const [name, setName] = useState("");
  const [input, setInput] = useState("");
  const [error, setError] = useState<unknown>(null);
  const start = async () => {
    try {
      const body = { workflow: name.trim(), ...(input.trim() ? { input: JSON.parse(input) as unknown } : {}) };
      const { runId } = await postJson<{ runId: string }>("/runs", body);
      navigate(`/runs/${encodeURIComponent(runId)}`);
    } catch (err) {
      setError(err);
    }
  };
  return (
    <details class="card">
      <summary>Start a run</summary>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void start();
        }}
      >
        <label for="start-workflow">Workflow name</label>
        <input id="start-workflow" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
        <label for="start-input">Input (JSON, optional)</label>
        <textarea id="start-input" rows={3} value={input} onInput={(e) => setInput(e.currentTarget.value)} />
        <button type="submit">Start run</button>
        {error !== null && <ErrorNote error={error} />}
      </form>
    </details>
  );
}
