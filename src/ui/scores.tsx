/**
 * The run page's scores (GET /runs/:id/scores): one row per scorer result, task, attempt, scorer,
 * status, score and reason or error; reloaded whenever the run page's report is (`version`). And
 * the picker that opens the compare view with another run of the same workflow.
 */
import { useEffect, useState } from "preact/hooks";
import { getJson } from "./api.ts";
import { linkClick } from "./nav.ts";
import { ColumnHeads, ErrorNote, StatusBadge } from "./shared.tsx";
import { type RunListItem, type RunScores, scoreText } from "./types.ts";

export function ScoresTable({ runId, version }: { runId: string; version: unknown }) {
  const [data, setData] = useState<RunScores | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    const abort = new AbortController();
    getJson<RunScores>(`/runs/${encodeURIComponent(runId)}/scores`, abort.signal)
      .then((s) => {
        setData(s);
        setError(null);
      })
      .catch((e: unknown) => abort.signal.aborted || setError(e));
    return () => abort.abort();
  }, [runId, version]);
  if (error !== null) return <ErrorNote error={error} />;
  if (data === null) return <p>Loading the scores…</p>;
  if (data.scores.length === 0) return <p>No scores: this run's tasks have no scorers, or none has finished.</p>;
  return (
    <table data-testid="run-scores" aria-labelledby="scores-title">
      <ColumnHeads names={["Task", "Attempt", "Scorer", "Status", "Score", "Reason or error"]} />
      <tbody>
        {data.scores.map((s) => (
          <tr key={`${s.nodeId}#${s.iteration}#${s.attempt}#${s.scorerId}`}>
            <td>
              {s.nodeId}
              {s.iteration > 0 ? ` #${s.iteration}` : ""}
            </td>
            <td>{s.attempt}</td>
            <td>{s.scorerName}</td>
            <td>
              <StatusBadge status={s.status} />
            </td>
            <td>{s.status === "scored" ? scoreText(s) : "–"}</td>
            <td class={s.status === "error" ? "error" : undefined}>{s.status === "error" ? (s.error ?? "") : (s.reason ?? "")}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** "Compare with" another run of the same workflow, newest first; the link opens /runs/<this>/compare/<other>. */
export function ComparePicker({ runId, workflowName }: { runId: string; workflowName: string }) {
  const [others, setOthers] = useState<RunListItem[] | null>(null);
  const [other, setOther] = useState("");
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    const abort = new AbortController();
    getJson<{ runs: RunListItem[] }>(`/runs?workflow=${encodeURIComponent(workflowName)}&limit=100`, abort.signal)
      .then((r) => {
        const list = r.runs.filter((x) => x.runId !== runId && x.status !== "queued");
        setOthers(list);
        setOther((o) => o || (list[0]?.runId ?? ""));
      })
      .catch((e: unknown) => abort.signal.aborted || setError(e));
    return () => abort.abort();
  }, [runId, workflowName]);
  if (error !== null) return <ErrorNote error={error} />;
  if (others === null) return null;
  if (others.length === 0) return <p>No other run of {workflowName} to compare with.</p>;
  const href = `/runs/${encodeURIComponent(runId)}/compare/${encodeURIComponent(other)}`;
  return (
    <div class="compare-picker">
      <label>
        <span id="compare-with">Compare with</span>
        <select aria-labelledby="compare-with" value={other} onChange={(e) => setOther(e.currentTarget.value)}>
          {others.map((r) => (
            <option key={r.runId} value={r.runId}>
              {r.runId} ({r.status}
              {r.parentRunId === runId ? ", fork of this run" : ""})
            </option>
          ))}
        </select>
      </label>
      <a class="button-link" href={href} onClick={linkClick(href)}>
        Compare
      </a>
    </div>
  );
}
