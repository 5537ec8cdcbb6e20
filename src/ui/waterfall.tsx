/**
 * The run page's waterfall: one bar per attempt, retry backoff, wait and queue time on one time
 * axis (GET /runs/:id/waterfall), each kind in its own colour with a legend. Every bar is a
 * focusable button; hovering or focusing it shows its details (times, outcome, error and stack,
 * usage) in a live region the bar names with aria-describedby. Reloaded whenever the run page's
 * report is (`version`).
 */
import { useState } from "preact/hooks";
import { useJson } from "./use-json.ts";
import { duration, time, usage } from "./format.ts";
import { ErrorNote } from "./shared.tsx";
import type { Waterfall as WaterfallData, WaterfallBar, WaterfallKind } from "./types.ts";

const KIND_LABEL: Record<WaterfallKind, string> = {
  queued: "Queued",
  running: "Running",
  "retry-wait": "Retry wait",
  approval: "Waiting for approval",
  timer: "Waiting for a timer",
  signal: "Waiting for a signal",
  human: "Waiting for a person",
};
const TICKS = [0, 0.25, 0.5, 0.75, 1];
const DETAILS_ID = "waterfall-details";

const rowName = (b: WaterfallBar) =>
  b.nodeId === null
    ? "run"
    : `${b.nodeId}${b.iteration > 0 ? ` #${b.iteration}` : ""}${b.attempt === null ? "" : b.kind === "retry-wait" ? ` · before attempt ${b.attempt}` : ` · attempt ${b.attempt}`}`;

/** What a bar says when focused: the text its button is named by, and the lines of its details. */
function barLabel(b: WaterfallBar, nowMs: number): string {
  const outcome = b.kind === "running" ? (b.state ?? "running") : b.endMs === null ? "ongoing" : "over";
  return `${rowName(b)}: ${KIND_LABEL[b.kind]}, ${duration((b.endMs ?? nowMs) - b.startMs)}, ${outcome}`;
}

export function Waterfall({ runId, version }: { runId: string; version: unknown }) {
  const { data, error } = useJson<WaterfallData>(`/runs/${encodeURIComponent(runId)}/waterfall`, version);
  const [shown, setShown] = useState<number | null>(null);

  if (error !== null) return <ErrorNote error={error} />;
  if (data === null) return <p>Loading the waterfall…</p>;
  if (data.bars.length === 0) return <p>Nothing has run yet.</p>;
  const nowMs = Date.now();
  const span = Math.max(1, data.toMs - data.fromMs);
  const at = (ms: number) => ((ms - data.fromMs) / span) * 100;
  const kinds = [...new Set(data.bars.map((b) => b.kind))];
  const selected = shown === null ? undefined : data.bars[shown];
  return (
    <div class="waterfall">
      <ul class="legend" aria-label="Bar colours">
        {kinds.map((k) => (
          <li key={k}>
            <span class={`swatch bar-${k}`} aria-hidden="true" />
            {KIND_LABEL[k]}
          </li>
        ))}
        {data.bars.some((b) => b.state === "failed") && (
          <li>
            <span class="swatch bar-running bar-failed" aria-hidden="true" />
            Failed attempt
          </li>
        )}
      </ul>
      <div class="axis" aria-hidden="true">
        {TICKS.map((t) => (
          <span key={t} style={{ left: `${t * 100}%` }}>
            {duration(Math.round(t * span))}
          </span>
        ))}
      </div>
      <ol class="bars" aria-label={`Waterfall of run ${runId}, ${data.bars.length} bars, from ${time(data.fromMs)}`}>
        {data.bars.map((b, i) => {
          const left = at(b.startMs);
          const width = Math.max(0, at(b.endMs ?? Math.max(nowMs, data.toMs)) - left);
          return (
            <li key={`${b.kind}:${b.nodeId}:${b.iteration}:${b.attempt}:${b.startMs}`} class="bar-row">
              <span class="bar-name">{rowName(b)}</span>
              <span class="track">
                <button
                  type="button"
                  class={`bar bar-${b.kind}${b.state === "failed" ? " bar-failed" : ""}${b.endMs === null ? " bar-open" : ""}`}
                  style={{ left: `${left}%`, width: `${Math.min(width, 100 - left)}%` }}
                  aria-label={barLabel(b, nowMs)}
                  aria-describedby={shown === i ? DETAILS_ID : undefined}
                  aria-expanded={shown === i}
                  aria-controls={DETAILS_ID}
                  data-kind={b.kind}
                  data-node={b.nodeId ?? ""}
                  data-attempt={b.attempt ?? ""}
                  onMouseEnter={() => setShown(i)}
                  onFocus={() => setShown(i)}
                  onClick={() => setShown(i)}
                />
              </span>
            </li>
          );
        })}
      </ol>
      <section id={DETAILS_ID} class="bar-details card" aria-label="Bar details" aria-live="polite" data-testid="bar-details">
        {selected ? <BarDetails bar={selected} nowMs={nowMs} /> : <p class="muted">Hover over or focus a bar (Tab) to see its details.</p>}
      </section>
    </div>
  );
}

function BarDetails({ bar: b, nowMs }: { bar: WaterfallBar; nowMs: number }) {
  return (
    <>
      <h3>
        {rowName(b)}: {KIND_LABEL[b.kind]}
      </h3>
      <dl class="facts">
        <dt>From</dt>
        <dd>{time(b.startMs)}</dd>
        <dt>To</dt>
        <dd>{b.endMs === null ? "still going" : time(b.endMs)}</dd>
        <dt>Duration</dt>
        <dd data-testid="bar-duration">{duration((b.endMs ?? nowMs) - b.startMs)}</dd>
        {b.state !== null && (
          <>
            <dt>Outcome</dt>
            <dd>{b.state}</dd>
          </>
        )}
        {b.usage !== null && (
          <>
            <dt>Usage</dt>
            <dd>{usage(b.usage)}</dd>
          </>
        )}
        {b.error !== null && (
          <>
            <dt>Error</dt>
            <dd class="error">
              {b.error.code ? `${b.error.code}: ` : ""}
              {b.error.message}
            </dd>
          </>
        )}
      </dl>
      {b.error?.stack && b.error.stack.length > 0 && (
        <details class="stack">
          <summary>Stack of attempt {b.attempt}</summary>
          <pre>{b.error.stack.join("\n")}</pre>
        </details>
      )}
    </>
  );
}
