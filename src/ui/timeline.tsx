/**
 * The run's frames on a slider: the tree at frame N (rebuilt by the server from keyframes and
 * deltas) with what changed from frame N-1 highlighted, and the runs forked from that frame. While the slider sits on the last frame it
 * follows the run: a new frame (`version` changes with the run's events) moves it along.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { getJson } from "./api.ts";
import { time } from "./format.ts";
import { linkClick } from "./nav.ts";
import { ErrorNote } from "./shared.tsx";
import { ChangeList, changedKeys, TaskTree } from "./tree.tsx";
import type { FrameAt, FrameList } from "./types.ts";

export function Timeline({ runId, version }: { runId: string; version: number }) {
  const path = `/runs/${encodeURIComponent(runId)}/frames`;
  const [list, setList] = useState<FrameList | null>(null);
  const [at, setAt] = useState<number | null>(null);
  const [frame, setFrame] = useState<FrameAt | null>(null);
  const [error, setError] = useState<unknown>(null);
  const following = useRef(true);

  useEffect(() => {
    const abort = new AbortController();
    getJson<FrameList>(path, abort.signal)
      .then((l) => {
        setList(l);
        if (l.count > 0 && (following.current || at === null)) setAt(l.count - 1);
      })
      .catch((e: unknown) => abort.signal.aborted || setError(e));
    return () => abort.abort();
  }, [path, version]);

  useEffect(() => {
    if (at === null) return;
    const abort = new AbortController();
    getJson<FrameAt>(`${path}/${at}`, abort.signal)
      .then((f) => {
        setFrame(f);
        setError(null);
      })
      .catch((e: unknown) => abort.signal.aborted || setError(e));
    return () => abort.abort();
  }, [path, at]);

  if (error !== null) return <ErrorNote error={error} />;
  if (!list) return <p>Loading frames…</p>;
  if (list.count === 0) return <p>No frames yet.</p>;
  const last = list.count - 1;
  const shown = frame && frame.frameNo === at ? frame : null;
  const highlight = shown ? changedKeys(shown.changes) : undefined;
  const count = shown ? shown.changes.mounted.length + shown.changes.unmounted.length + shown.changes.changed.length : 0;
  return (
    <div class="timeline">
      <label for="frame-slider">Frame</label>
      <div class="slider-row">
        <input
          id="frame-slider"
          type="range"
          min={0}
          max={last}
          step={1}
          value={at ?? last}
          aria-valuetext={`Frame ${at ?? last} of ${last}`}
          onInput={(e) => {
            const n = Number(e.currentTarget.value);
            following.current = n === last;
            setAt(n);
          }}
        />
        <output for="frame-slider" data-testid="frame-info">
          Frame {at ?? last} of {last}
          {shown && ` · ${time(shown.createdAtMs)} · ${count} ${count === 1 ? "change" : "changes"}`}
        </output>
      </div>
      {shown ? (
        <>
          {shown.forks.length > 0 && (
            <p class="forks">
              Forked from this frame:{" "}
              {shown.forks.map((f, i) => (
                <span key={f.runId}>
                  {i > 0 && ", "}
                  <a href={`/runs/${encodeURIComponent(f.runId)}`} onClick={linkClick(`/runs/${encodeURIComponent(f.runId)}`)}>
                    run <code>{f.runId.slice(0, 12)}</code>
                  </a>{" "}
                  ({f.status})
                </span>
              ))}
            </p>
          )}
          <h3>{shown.frameNo === 0 ? "First frame: everything mounted" : `Changes from frame ${shown.frameNo - 1}`}</h3>
          <ChangeList changes={shown.changes} />
          <TaskTree tree={shown.tree} highlight={highlight} label={`Workflow tree at frame ${shown.frameNo}`} />
        </>
      ) : (
        <p>Loading frame…</p>
      )}
    </div>
  );
}
