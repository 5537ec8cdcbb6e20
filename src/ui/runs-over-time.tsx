/**
 * The runs list's runs over time (GET /runs/activity), in plain SVG: runs started, finished and
 * failed in each of the last 60 minutes, and what agents cost on each of the last 14 days. Each
 * chart has a title and a table of the same numbers for screen readers (and anyone who wants the
 * figures). Reloaded whenever the runs list changes (`version`).
 */
import { useEffect, useState } from "preact/hooks";
import { getJson } from "./api.ts";
import { ErrorNote } from "./shared.tsx";
import type { RunActivity } from "./types.ts";

const MINUTES = 60;
const DAYS = 14;
const SERIES = ["started", "finished", "failed"] as const;
const W = 600;
const H = 120;

const clock = (ms: number) => new Date(ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
const day = (ms: number) => new Date(ms).toLocaleDateString([], { month: "short", day: "numeric", timeZone: "UTC" });
const dollars = (n: number) => `$${n.toFixed(n < 1 ? 4 : 2)}`;

export function RunsOverTime({ version }: { version: unknown }) {
  const [data, setData] = useState<RunActivity | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    const abort = new AbortController();
    getJson<RunActivity>(`/runs/activity?minutes=${MINUTES}&days=${DAYS}`, abort.signal)
      .then((a) => {
        setData(a);
        setError(null);
      })
      .catch((e: unknown) => abort.signal.aborted || setError(e));
    return () => abort.abort();
  }, [version]);
  if (error !== null) return <ErrorNote error={error} />;
  if (data === null) return null;
  return (
    <div class="over-time">
      <PerMinute rows={data.perMinute} />
      <SpendPerDay rows={data.spendPerDay} />
    </div>
  );
}

function PerMinute({ rows }: { rows: RunActivity["perMinute"] }) {
  const top = Math.max(1, ...rows.flatMap((r) => SERIES.map((s) => r[s])));
  const slot = W / Math.max(1, rows.length);
  const bar = slot / (SERIES.length + 1);
  const totals = SERIES.map((s) => rows.reduce((n, r) => n + r[s], 0));
  return (
    <figure class="chart" data-testid="runs-per-minute" data-first-minute={rows[0]?.minuteMs}>
      <figcaption>
        Runs per minute, last {rows.length} minutes:{" "}
        {SERIES.map((s, i) => (
          <span key={s} class="key">
            <span class={`swatch series-${s}`} aria-hidden="true" /> {totals[i]} {s}
          </span>
        ))}
      </figcaption>
      <svg viewBox={`0 0 ${W} ${H + 16}`} role="img" aria-label={`Runs started, finished and failed per minute; peak ${top} in a minute`}>
        <line x1={0} x2={W} y1={H} y2={H} class="baseline" />
        {rows.map((r, i) =>
          SERIES.map((s, j) =>
            r[s] === 0 ? null : (
              <rect
                key={`${r.minuteMs}-${s}`}
                class={`series-${s}`}
                x={i * slot + (j + 0.5) * bar}
                width={bar}
                y={H - (r[s] / top) * H}
                height={(r[s] / top) * H}
                data-minute={r.minuteMs}
                data-series={s}
                data-count={r[s]}
              >
                <title>{`${clock(r.minuteMs)}: ${r[s]} ${s}`}</title>
              </rect>
            ),
          ),
        )}
        {rows.length > 0 && (
          <>
            <text x={0} y={H + 13} class="tick">
              {clock(rows[0]!.minuteMs)}
            </text>
            <text x={W} y={H + 13} class="tick" text-anchor="end">
              {clock(rows[rows.length - 1]!.minuteMs)}
            </text>
          </>
        )}
      </svg>
      <details>
        <summary>As a table</summary>
        <table>
          <thead>
            <tr>
              <th scope="col">Minute</th>
              {SERIES.map((s) => (
                <th key={s} scope="col">
                  {s}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows
              .filter((r) => SERIES.some((s) => r[s] > 0))
              .map((r) => (
                <tr key={r.minuteMs}>
                  <th scope="row">{clock(r.minuteMs)}</th>
                  {SERIES.map((s) => (
                    <td key={s}>{r[s]}</td>
                  ))}
                </tr>
              ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}

function SpendPerDay({ rows }: { rows: RunActivity["spendPerDay"] }) {
  const top = Math.max(0.0001, ...rows.map((r) => r.costUsd));
  const slot = W / DAYS;
  const lastDay = Math.floor(Date.now() / 86_400_000) * 86_400_000;
  const total = rows.reduce((n, r) => n + r.costUsd, 0);
  return (
    <figure class="chart" data-testid="spend-per-day">
      <figcaption>
        Agent spend per day (UTC), last {DAYS} days: {dollars(total)}
      </figcaption>
      <svg viewBox={`0 0 ${W} ${H + 16}`} role="img" aria-label={`Agent spend per day, ${dollars(total)} in all`}>
        <line x1={0} x2={W} y1={H} y2={H} class="baseline" />
        {rows.map((r) => {
          const i = DAYS - 1 - Math.round((lastDay - r.dayMs) / 86_400_000);
          const h = (r.costUsd / top) * H;
          return (
            <rect
              key={r.dayMs}
              class="series-spend"
              x={i * slot + slot * 0.15}
              width={slot * 0.7}
              y={H - h}
              height={h}
              data-day={r.dayMs}
              data-cost={r.costUsd}
            >
              <title>{`${day(r.dayMs)}: ${dollars(r.costUsd)}`}</title>
            </rect>
          );
        })}
        <text x={0} y={H + 13} class="tick">
          {day(lastDay - (DAYS - 1) * 86_400_000)}
        </text>
        <text x={W} y={H + 13} class="tick" text-anchor="end">
          {day(lastDay)}
        </text>
      </svg>
    </figure>
  );
}
