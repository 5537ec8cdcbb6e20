/**
 * A frame's tree drawn as nested lists: containers (sequence, parallel, loop, …) with their
 * children, tasks as rows with their state and, on the run page, attempts, duration, error,
 * output row and the agent's output so far. Nodes named in `highlight` are marked as changed.
 */
import { duration } from "./format.ts";
import { StatusBadge } from "./shared.tsx";
import type { FrameChanges, FrameTree, OutputRow, PropValue, TaskReport } from "./types.ts";

/** A frame that mounts a thousand tasks lists the first ones; the tree marks them all. */
const MAX_CHANGE_LINES = 40;

export type TaskInfo = { report?: TaskReport; output?: OutputRow; log?: string };

export const nodeKey = (id: PropValue | undefined, iteration: PropValue | undefined) => `${String(id)}#${typeof iteration === "number" ? iteration : 0}`;

/** The keys of the nodes a frame mounted or changed (what the timeline highlights). */
export function changedKeys(changes: FrameChanges): Set<string> {
  return new Set([...changes.mounted, ...changes.changed].map((n) => nodeKey(n.id, n.iteration)));
}

type TreeProps = {
  tree: FrameTree;
  /** What the run page knows of each task beyond the frame, by nodeKey. */
  info?: (key: string) => TaskInfo | undefined;
  highlight?: Set<string>;
  label: string;
};

export function TaskTree({ tree, info, highlight, label }: TreeProps) {
  return (
    <section class="tree" aria-label={label}>
      <Container node={tree} info={info} highlight={highlight} />
    </section>
  );
}

function containerTitle(node: FrameTree): string {
  const p = node.props;
  switch (node.tag) {
    case "workflow":
      return `workflow ${String(p.name ?? "")}`.trim();
    case "sequence":
    case "parallel": {
      // A Parallel's id and a group's label name it; the cap says how many of its tasks run at once.
      const name = [node.tag, p.id, p.label].filter((part) => typeof part === "string").join(" ");
      return typeof p.maxConcurrency === "number" ? `${name} · at most ${p.maxConcurrency} at once` : name;
    }
    case "loop":
      return `loop ${String(p.id)} · iteration ${String(p.iteration ?? 0)}${p.done ? " · done" : ""}`;
    default:
      return typeof p.id === "string" ? `${node.tag} ${p.id}` : node.tag;
  }
}

function Container({ node, info, highlight }: { node: FrameTree; info: TreeProps["info"]; highlight: Set<string> | undefined }) {
  const changed = typeof node.props.id === "string" && highlight?.has(nodeKey(node.props.id, node.props.iteration));
  return (
    <div class={`container${changed ? " changed" : ""}`} data-kind={node.tag}>
      <span class="kind">
        {containerTitle(node)}
        {changed && <span class="change-mark"> (changed)</span>}
      </span>
      <ul>
        {node.children.map((child, i) => (
          <li key={child.tag === "task" ? nodeKey(child.props.id, child.props.iteration) : `${child.tag}-${i}`}>
            {child.tag === "task" ? <Task node={child} info={info} highlight={highlight} /> : <Container node={child} info={info} highlight={highlight} />}
          </li>
        ))}
      </ul>
    </div>
  );
}

function Task({ node, info, highlight }: { node: FrameTree; info: TreeProps["info"]; highlight: Set<string> | undefined }) {
  const p = node.props;
  const key = nodeKey(p.id, p.iteration);
  const known = info?.(key);
  const report = known?.report;
  const state = report?.state ?? String(p.state ?? "pending");
  const changed = highlight?.has(key) ?? false;
  const iteration = typeof p.iteration === "number" ? p.iteration : 0;
  return (
    <div class={`task${changed ? " changed" : ""}`} data-task={String(p.id)} data-iteration={iteration}>
      <div class="task-head">
        <code class="task-id">{String(p.id)}</code>
        {iteration > 0 && <span class="muted"> #{iteration}</span>}
        {typeof p.label === "string" && <span class="muted"> {p.label}</span>}
        <StatusBadge status={state} />
        {changed && <span class="change-mark">changed</span>}
        {report && (
          <span class="muted task-facts">
            {report.attempts} {report.attempts === 1 ? "attempt" : "attempts"} · {duration(report.durationMs)}
          </span>
        )}
      </div>
      {report?.error && <p class="error task-error">{`${report.error.code ?? ""} ${report.error.message ?? ""}`.trim()}</p>}
      {report && report.state !== "finished" && <AttemptStack failed={report.failedAttempts} />}
      {known?.output && <code class="output">{JSON.stringify(known.output.row)}</code>}
      {known?.log && (
        <pre class="agent-output" role="log" aria-label={`Agent output of ${String(p.id)}`}>
          {known.log}
        </pre>
      )}
    </div>
  );
}

/**
 * Where the last failed attempt's error was thrown: the frames in the author's files (the stored
 * stack keeps only those, and counts the internal ones), collapsed under the error. Shown while
 * the task has not finished (failed, or retrying); `inspect` keeps the history of one that did.
 */
function AttemptStack({ failed }: { failed: TaskReport["failedAttempts"] | undefined }) {
  const last = failed?.findLast((f) => f.error.stack !== undefined && f.error.stack.length > 0);
  if (!last?.error.stack) return null;
  return (
    <details class="stack" data-testid="attempt-stack">
      <summary>Stack of attempt {last.attempt}</summary>
      <pre>{last.error.stack.join("\n")}</pre>
    </details>
  );
}

/** The changes from the frame before, one line each: + mounted, − unmounted, ~ prop from → to. */
export function ChangeList({ changes }: { changes: FrameChanges }) {
  const name = (n: { id: string; iteration: number }) => `${n.id}${n.iteration > 0 ? ` #${n.iteration}` : ""}`;
  const shown = (v: PropValue | undefined) => (v === undefined ? "(none)" : typeof v === "string" ? v : JSON.stringify(v));
  const lines = [
    ...changes.mounted.map((n) => `+ ${n.tag} ${name(n)} mounted`),
    ...changes.unmounted.map((n) => `− ${n.tag} ${name(n)} unmounted`),
    ...changes.changed.map(
      (c) =>
        `~ ${name(c)}: ${Object.entries(c.props)
          .map(([prop, { from, to }]) => `${prop} ${shown(from)} → ${shown(to)}`)
          .join(", ")}`,
    ),
  ];
  if (lines.length === 0) return <p class="muted">No change in the plan.</p>;
  return (
    <ul class="changes" aria-label="Changes from the frame before">
      {lines.slice(0, MAX_CHANGE_LINES).map((l) => (
        <li key={l}>{l}</li>
      ))}
      {lines.length > MAX_CHANGE_LINES && <li class="muted">… and {lines.length - MAX_CHANGE_LINES} more</li>}
    </ul>
  );
}
