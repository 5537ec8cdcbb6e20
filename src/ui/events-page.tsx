/**
 * A run's journal at `/runs/<id>/events`: every event in order, filtered by type and node (both
 * kept in the URL's query), following the run live over its server-sent events until it ends.
 * Pausing stops the stream; following again continues after the last event received.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { followEvents } from "./api.ts";
import { linkClick, useQueryParam } from "./nav.ts";
import { ColumnHeads, ErrorNote, FilterSelect } from "./shared.tsx";
import { EVENT_TYPES, type RunEvent } from "./types.ts";

const HIDDEN = new Set(["type", "runId", "seq", "timestampMs", "nodeId", "iteration"]);

function details(e: RunEvent): string {
  const rest = Object.entries(e.payload).filter(([k]) => !HIDDEN.has(k));
  return rest.map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`).join(" · ");
}

export function EventsPage({ runId }: { runId: string }) {
  const [type, setType] = useQueryParam("type");
  const [node, setNode] = useQueryParam("node");
  const [follow, setFollow] = useState(true);
  const [events, setEvents] = useState<RunEvent[]>([]);
  const [ended, setEnded] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const lastSeq = useRef(-1);
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);

  useEffect(() => {
    if (!follow) return;
    const abort = new AbortController();
    setEnded(false);
    // Events arrive in bursts on replay: batch them into one update per animation frame.
    let batch: RunEvent[] = [];
    let scheduled = false;
    const flush = () => {
      scheduled = false;
      const add = batch;
      batch = [];
      setEvents((old) => [...old, ...add]);
    };
    void (async () => {
      while (!abort.signal.aborted) {
        try {
          await followEvents(
            runId,
            lastSeq.current,
            (t, seq, payload) => {
              lastSeq.current = seq;
              const nodeId = typeof payload.nodeId === "string" ? payload.nodeId : undefined;
              const ts = typeof payload.timestampMs === "number" ? payload.timestampMs : undefined;
              const iteration = typeof payload.iteration === "number" ? payload.iteration : undefined;
              batch.push({
                seq,
                type: t,
                payload,
                ...(nodeId ? { nodeId } : {}),
                ...(ts ? { timestampMs: ts } : {}),
                ...(iteration !== undefined ? { iteration } : {}),
              });
              if (!scheduled) {
                scheduled = true;
                requestAnimationFrame(flush);
              }
            },
            abort.signal,
          );
          setEnded(true);
          return;
        } catch (e) {
          if (abort.signal.aborted) return;
          setError(e);
          await new Promise((r) => setTimeout(r, 1000)); // dropped: reconnect after the last seq received
        }
      }
    })();
    return () => abort.abort();
  }, [runId, follow]);

  const nodes = [...new Set(events.flatMap((e) => (e.nodeId ? [e.nodeId] : [])))].sort();
  const shown = events.filter((e) => (type === "" || e.type === type) && (node === "" || e.nodeId === node));
  const runHref = `/runs/${encodeURIComponent(runId)}`;
  return (
    <section aria-labelledby="events-title">
      <p>
        <a href={runHref} onClick={linkClick(runHref)}>
          ← Run {runId.slice(0, 12)}
        </a>
      </p>
      <h1 id="events-title" ref={heading} tabIndex={-1}>
        Events of run <code>{runId}</code>
      </h1>
      <form class="filters" aria-label="Filter events" onSubmit={(e) => e.preventDefault()}>
        <FilterSelect id="events-type-label" label="Type" value={type} options={EVENT_TYPES} onChange={setType} />
        <FilterSelect id="events-node-label" label="Node" value={node} options={node && !nodes.includes(node) ? [...nodes, node] : nodes} onChange={setNode} />
        <label class="check">
          <input type="checkbox" checked={follow} onChange={(e) => setFollow(e.currentTarget.checked)} />
          Follow live
        </label>
      </form>
      <p role="status" data-testid="events-state">
        {shown.length} of {events.length} events shown · {!follow ? "paused" : ended ? "the run is over; every event is shown" : "following the run live"}
      </p>
      {error !== null && <ErrorNote error={error} />}
      <table class="events">
        <ColumnHeads names={["Seq", "Time", "Type", "Node", "Details"]} />
        <tbody>
          {shown.map((e) => (
            <tr key={e.seq} data-seq={e.seq} data-type={e.type}>
              <td>{e.seq}</td>
              <td>{e.timestampMs ? new Date(e.timestampMs).toLocaleTimeString() : "–"}</td>
              <td>{e.type}</td>
              <td>
                {e.nodeId ? <code>{e.nodeId}</code> : ""}
                {e.nodeId && (e.iteration ?? 0) > 0 && <span class="muted"> #{e.iteration}</span>}
              </td>
              <td class="details">{details(e)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
