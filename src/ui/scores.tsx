/**
 * The run page's scores (GET /runs/:id/scores): one row per scorer result, task, attempt, scorer,
 * status, score and reason or error; reloaded whenever the run page's report is (`version`). And
 * the picker that opens the compare view with another run of the same workflow.
 */
import { useState } from "preact/hooks";
import { linkClick } from "./nav.ts";
import { ColumnHeads, ErrorNote, StatusBadge } from "./shared.tsx";
import { type RunListItem, type RunScores, scoreText } from "./types.ts";
import { useJson } from "./use-json.ts";

export function ScoresTable({ runId, version }: { runId: string; version: unknown }) {
  const { data, error } = useJson<RunScores>(`/runs/${encodeURIComponent(runId)}/scores`, version);
  if (error !== null) return <ErrorNote error={error} />;
  if (data === null) return <p>Loading the scores…</p>;
  if (data.scores.length === 0) return <p>No scores recorded for this run (its tasks have no scorers, or none has finished an attempt).</p>;
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
  const { data, error } = useJson<{ runs: RunListItem[] }>(`/runs?workflow=${encodeURIComponent(workflowName)}&limit=100`);
  const others = data?.runs.filter((x) => x.runId !== runId && x.status !== "queued") ?? null;
  const [picked, setPicked] = useState("");
  const other = picked || (others?.[0]?.runId ?? "");
  if (error !== null) return <ErrorNote error={error} />;
  if (others === null) return null;
  if (others.length === 0) return <p>No other run of {workflowName} to compare with.</p>;
  const href = `/runs/${encodeURIComponent(runId)}/compare/${encodeURIComponent(other)}`;
  return (
    <div class="compare-picker">
      <label>
        <span id="compare-with">Compare with</span>
        <select aria-labelledby="compare-with" value={other} onChange={(e) => setPicked(e.currentTarget.value)}>
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
