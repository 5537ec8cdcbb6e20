/**
 * The run's frames on a slider: the tree at frame N (rebuilt by the server from keyframes and
 * deltas) with what changed from frame N-1 highlighted, the runs forked from that frame, and a
 * form that forks the run from it (POST /runs/:id/fork) and opens the fork. While the slider sits on the last frame it
 * follows the run: a new frame (the run page's latest, `lastFrameNo`) moves it along.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { getJson, postJson } from "./api.ts";
import { time } from "./format.ts";
import { linkClick, navigate } from "./nav.ts";
import { ErrorNote } from "./shared.tsx";
import { ChangeList, changedKeys, TaskTree } from "./tree.tsx";
import type { FrameAt } from "./types.ts";

export function Timeline({ runId, lastFrameNo }: { runId: string; lastFrameNo: number | null }) {
  const path = `/runs/${encodeURIComponent(runId)}/frames`;
  const [at, setAt] = useState<number | null>(null);
  const [frame, setFrame] = useState<FrameAt | null>(null);
  const [error, setError] = useState<unknown>(null);
  const following = useRef(true);

  // The run page's latest frame says how many there are; on the last one the slider moves along.
  // The current position is read in the update, not from this render: the effect may run after a
  // key already moved the slider, and must not send it back to the last frame.
  useEffect(() => {
    if (lastFrameNo !== null) setAt((current) => (following.current || current === null ? lastFrameNo : current));
  }, [lastFrameNo]);

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
  if (lastFrameNo === null) return <p>No frames yet.</p>;
  const last = lastFrameNo;
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
          <ForkForm runId={runId} frameNo={shown.frameNo} />
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

/** Forks the run from `frameNo` (optionally running some of its tasks again) and opens the fork's page. */
function ForkForm({ runId, frameNo }: { runId: string; frameNo: number }) {
  const [reset, setReset] = useState("");
  const [runNow, setRunNow] = useState(true);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const fork = async () => {
    setBusy(true);
    try {
      const resetNodes = reset
        .split(",")
        .map((s) => s.trim())
        .filter((s) => s !== "");
      const body = { frame: frameNo, run: runNow, ...(resetNodes.length > 0 ? { resetNodes } : {}) };
      const made = await postJson<{ runId: string }>(`/runs/${encodeURIComponent(runId)}/fork`, body);
      navigate(`/runs/${encodeURIComponent(made.runId)}`);
    } catch (e) {
      setError(e);
      setBusy(false);
    }
  };
  return (
    <form
      class="fork-form"
      aria-label={`Fork from frame ${frameNo}`}
      onSubmit={(e) => {
        e.preventDefault();
        void fork();
      }}
    >
      <label for="fork-reset">Tasks to run again (optional, comma-separated ids)</label>
      <input id="fork-reset" value={reset} onInput={(e) => setReset(e.currentTarget.value)} />
      <label class="check">
        <input type="checkbox" checked={runNow} onChange={(e) => setRunNow(e.currentTarget.checked)} />
        Start the fork at once
      </label>
      <button type="submit" disabled={busy}>
        Fork from frame {frameNo}
      </button>
      {error !== null && <ErrorNote error={error} />}
    </form>
  );
}
