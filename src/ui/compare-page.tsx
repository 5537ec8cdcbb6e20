/**
 * `/runs/<a>/compare/<b>`: two runs task by task (GET /runs/:a/compare/:b), what `smithers eval
 * compare` prints: each task's state, output rows side by side, each scorer's score in A and B with
 * the change, tokens, cost and time; tasks only one run has; a totals row and each scorer's mean.
 */
import { useEffect, useRef } from "preact/hooks";
import { duration } from "./format.ts";
import { linkClick } from "./nav.ts";
import { ColumnHeads, ErrorNote, StatusBadge } from "./shared.tsx";
import { type CompareSide, type RunComparison, scoreDelta, scoreText, type Usage } from "./types.ts";
import { useJson } from "./use-json.ts";

const tokens = (u: Usage | null | undefined) => (u ? (u.inputTokens + u.outputTokens).toLocaleString() : "–");
const cost = (u: Usage | null | undefined) => (u?.costUsd == null ? "–" : `$${u.costUsd.toFixed(4)}`);
const mean = (m: number | null) => (m === null ? "–" : m.toFixed(3));

function RunLink({ runId }: { runId: string }) {
  const href = `/runs/${encodeURIComponent(runId)}`;
  return (
    <a href={href} onClick={linkClick(href)}>
      <code>{runId}</code>
    </a>
  );
}

function Side({ side }: { side: CompareSide | null }) {
  if (!side) return <td class="muted">not in this run</td>;
  return (
    <td>
      <StatusBadge status={side.state} />
      {side.output && <pre class="run-input">{JSON.stringify(side.output)}</pre>}
      {side.error && (
        <p class="error task-error">
          {side.error.code}: {side.error.message}
        </p>
      )}
    </td>
  );
}

function ComparisonTable({ c }: { c: RunComparison }) {
  const pair = (f: (s: CompareSide) => string, a: CompareSide | null, b: CompareSide | null) => `${a ? f(a) : "–"} | ${b ? f(b) : "–"}`;
  return (
    <table data-testid="compare-table">
      <ColumnHeads names={["Task", "A", "B", "Scores (A | B)", "Tokens (A | B)", "Cost (A | B)", "Time (A | B)"]} />
      <tbody>
        {c.tasks.map((t) => (
          <tr key={`${t.nodeId}#${t.iteration}`} data-testid={`compare-${t.nodeId}-${t.iteration}`}>
            <th scope="row">
              {t.nodeId}
              {t.iteration > 0 ? ` #${t.iteration}` : ""}
              {t.presence !== "both" && <div class="hint">{t.presence === "only-a" ? "only in A" : "only in B"}</div>}
            </th>
            <Side side={t.a} />
            <Side side={t.b} />
            <td>
              {t.scores.map((s) => (
                <div key={s.scorerId}>
                  {s.scorerName}: {scoreText(s.a)} | {scoreText(s.b)}
                  {scoreDelta(s.delta)}
                </div>
              ))}
            </td>
            <td>{pair((s) => tokens(s.usage), t.a, t.b)}</td>
            <td>{pair((s) => cost(s.usage), t.a, t.b)}</td>
            <td>{pair((s) => duration(s.durationMs), t.a, t.b)}</td>
          </tr>
        ))}
      </tbody>
      <tfoot>
        <tr data-testid="compare-totals">
          <th scope="row">Totals</th>
          <td>
            {c.a.finished} of {c.a.tasks} tasks finished
          </td>
          <td>
            {c.b.finished} of {c.b.tasks} tasks finished
          </td>
          <td>
            {c.scoreMeans.map((m) => (
              <div key={m.scorerId}>
                mean {m.scorerName}: {mean(m.a)} | {mean(m.b)}
                {scoreDelta(m.delta)}
              </div>
            ))}
          </td>
          <td>
            {tokens(c.a.usage)} | {tokens(c.b.usage)}
          </td>
          <td>
            {cost(c.a.usage)} | {cost(c.b.usage)}
          </td>
          <td>
            {duration(c.a.taskDurationMs)} | {duration(c.b.taskDurationMs)}
          </td>
        </tr>
      </tfoot>
    </table>
  );
}

export function ComparePage({ a, b }: { a: string; b: string }) {
  const { data, error } = useJson<RunComparison>(`/runs/${encodeURIComponent(a)}/compare/${encodeURIComponent(b)}`);
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);
  return (
    <section aria-labelledby="compare-title">
      <p>
        <a href={`/runs/${encodeURIComponent(a)}`} onClick={linkClick(`/runs/${encodeURIComponent(a)}`)}>
          ← Run A
        </a>
      </p>
      <h1 id="compare-title" ref={heading} tabIndex={-1}>
        Compare runs
      </h1>
      {error !== null && <ErrorNote error={error} />}
      {data && (
        <>
          <dl class="facts">
            <dt>A</dt>
            <dd data-testid="compare-a">
              <RunLink runId={data.a.runId} /> {data.a.workflowName} <StatusBadge status={data.a.status} />
            </dd>
            <dt>B</dt>
            <dd data-testid="compare-b">
              <RunLink runId={data.b.runId} /> {data.b.workflowName} <StatusBadge status={data.b.status} />
            </dd>
          </dl>
          {data.warnings.map((w) => (
            <p key={w} class="warning" role="note">
              Warning: {w}
            </p>
          ))}
          <ComparisonTable c={data} />
        </>
      )}
    </section>
  );
}
