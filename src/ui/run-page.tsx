/**
 * One run at `/runs/<id>`: its status, the workflow tree of its latest frame with each task's
 * state, attempts, duration, error, output row and agent output, the approvals it waits for,
 * cancel / resume, the waterfall of its attempts and waits in time, its tasks' sandbox sessions, its
 * scores (with a link to compare it with another run of its workflow), and the frame timeline. Live through the run's server-sent events: each event
 * reloads the report (at most every 250 ms), agent output (NodeOutput events) is appended as it
 * arrives; the stream ends when the run does.
 */
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { ApiError, followEvents, getJson, postJson } from "./api.ts";
import { duration, runDuration, time, usage } from "./format.ts";
import { linkClick } from "./nav.ts";
import { ErrorNote, StatusBadge } from "./shared.tsx";
import { ApprovalCard } from "./approval-card.tsx";
import { Timeline } from "./timeline.tsx";
import { Waterfall } from "./waterfall.tsx";
import { Sandboxes } from "./sandboxes.tsx";
import { ComparePicker, ScoresTable } from "./scores.tsx";
import { nodeKey, TaskTree } from "./tree.tsx";
import { OVER, type FrameAt, type FrameTree, type OutputRow, type RunReport } from "./types.ts";

const RELOAD_MS = 250;

function useRun(runId: string) {
  const [report, setReport] = useState<RunReport | null>(null);
  const [outputs, setOutputs] = useState<Map<string, OutputRow>>(new Map());
  const [tree, setTree] = useState<FrameTree | null>(null);
  const [lastFrameNo, setLastFrameNo] = useState<number | null>(null);
  const [logs, setLogs] = useState<Map<string, string>>(new Map());
  const [error, setError] = useState<unknown>(null);
  const path = `/runs/${encodeURIComponent(runId)}`;
  const reload = useCallback(async () => {
    try {
      const [r, o, f] = await Promise.all([
        getJson<RunReport>(path),
        getJson<{ outputs: OutputRow[] }>(`${path}/outputs`),
        // A run that has not rendered yet has no frame: 404, and the tasks are listed without one.
        getJson<FrameAt>(`${path}/frames/latest`).catch((e: unknown) => {
          if (e instanceof ApiError && e.status === 404) return null;
          throw e;
        }),
      ]);
      setReport(r);
      setOutputs(new Map(o.outputs.map((x) => [nodeKey(x.nodeId, x.iteration), x])));
      setTree(f?.tree ?? null);
      setLastFrameNo(f?.lastFrameNo ?? null);
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
    const onEvent = (type: string, seq: number, payload: Record<string, unknown>) => {
      after = seq;
      if (type === "NodeOutput" && typeof payload.text === "string") {
        const key = nodeKey(payload.nodeId as string, payload.iteration as number);
        const piece = payload.stream === "tool" ? `\n[tool] ${payload.text}\n` : payload.text;
        setLogs((m) => new Map(m).set(key, (m.get(key) ?? "") + piece));
      }
      soon();
    };
    let after = -1;
    setLogs(new Map()); // the replay from the start rebuilds them
    void (async () => {
      await reload();
      while (!abort.signal.aborted) {
        try {
          after = await followEvents(runId, after, onEvent, abort.signal);
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
  return { report, outputs, tree, lastFrameNo, logs, error, act };
}

/** Before the first frame (a queued run), the report's tasks as a flat tree. */
const flatTree = (report: RunReport): FrameTree => ({
  tag: "workflow",
  props: { name: report.workflowName },
  children: report.nodes.map((n) => ({ tag: "task", props: { id: n.nodeId, iteration: n.iteration, state: n.state }, children: [] })),
});

export function RunPage({ runId }: { runId: string }) {
  const { report, outputs, tree, lastFrameNo, logs, error, act } = useRun(runId);
  const [timelineOpen, setTimelineOpen] = useState(false);
  const byKey = new Map((report?.nodes ?? []).map((n) => [nodeKey(n.nodeId, n.iteration), n]));
  const info = (key: string) => ({ report: byKey.get(key), output: outputs.get(key), log: logs.get(key) });
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []); // a page change moves focus to its title, as a reload would
  const over = report ? OVER.has(report.status) : true;
  const resumable =
    report !== null &&
    ["failed", "cancelled", "paused", "waiting-approval", "waiting-event", "waiting-timer", "waiting-slot", "waiting-rate"].includes(report.status);
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
            <dd>{report.workflowName}</dd>
            <dt>Started</dt>
            <dd>{time(report.startedAtMs)}</dd>
            <dt>Duration</dt>
            <dd>{duration(runDuration(report, Date.now()))}</dd>
            <dt>Usage</dt>
            <dd data-testid="run-usage">{usage(report.usage)}</dd>
            {"input" in report && report.input !== null && (
              <>
                <dt>Input</dt>
                <dd>
                  <pre class="run-input" data-testid="run-input">
                    {JSON.stringify(report.input, null, 2)}
                  </pre>
                </dd>
              </>
            )}
            {"slots" in report && report.slots.length > 0 && (
              <>
                <dt>Slots</dt>
                <dd data-testid="run-slots">{report.slots.map((s) => `${s.key}: ${s.held} held, ${s.waiting} waiting`).join("; ")}</dd>
              </>
            )}
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
            <a class="button-link" href={`/runs/${encodeURIComponent(runId)}/events`} onClick={linkClick(`/runs/${encodeURIComponent(runId)}/events`)}>
              Events
            </a>
          </div>
          {(report.pendingApprovals ?? []).map((a) => (
            <ApprovalCard
              key={`${a.nodeId}#${a.iteration}`}
              approval={a}
              onDecide={(verb, choice) => act(verb, { node: a.nodeId, iteration: a.iteration, ...choice })}
            />
          ))}
          <section aria-labelledby="waterfall-title">
            <h2 id="waterfall-title">Waterfall</h2>
            <Waterfall runId={runId} version={report} />
          </section>
          <Sandboxes runId={runId} version={report} />
          <section aria-labelledby="scores-title">
            <h2 id="scores-title">Scores</h2>
            <ScoresTable runId={runId} version={report} />
            <ComparePicker runId={runId} workflowName={report.workflowName} />
          </section>
          <h2 id="tree-title">Workflow</h2>
          {tree === null && report.nodes.length === 0 ? (
            <p>No tasks yet.</p>
          ) : (
            <TaskTree tree={tree ?? flatTree(report)} info={info} label="Workflow tree, latest frame" />
          )}
          <details class="card" onToggle={(e) => setTimelineOpen(e.currentTarget.open)}>
            <summary>Timeline</summary>
            {timelineOpen && <Timeline runId={runId} lastFrameNo={lastFrameNo} />}
          </details>
        </>
      )}
    </section>
  );
}
