/**
 * A run as it stood at one of its frames, read from the frame chain: every task that had been
 * mounted by then with its last state, and every loop's iteration. What fork and rewind keep.
 * The chain is walked once from frame 0: a delta's ops name the elements they touched, so the
 * cost is the frames' size, not frames x tree.
 */
import { decodeDelta, decodeFrameXml, LiveFrame, type XmlElement } from "../../codec/index.ts";
import { frames, type SmithersDb } from "../../db/index.ts";
import { SmithersError } from "../../errors/index.ts";
import { nodeKey } from "../../jsx/plan.ts";

export type TaskAtFrame = { nodeId: string; iteration: number; state: string; outputTable: string; label: string | undefined };
export type LoopAtFrame = { iteration: number; done: boolean };

export type RunAtFrame = {
  frameNo: number;
  /** By nodeKey: each task mounted at or before the frame, with the state it last had by then. */
  tasks: Map<string, TaskAtFrame>;
  /** By loop id. */
  loops: Map<string, LoopAtFrame>;
  /** The frame's own tree. */
  tree: XmlElement;
  /** Keys (nodeKey) of the tasks in the frame's tree: mounted at that frame. */
  mounted: Set<string>;
};

function noteElement(el: XmlElement, at: RunAtFrame): void {
  const p = el.props;
  if (el.tag === "task" && typeof p.id === "string") {
    const iteration = typeof p.iteration === "number" ? p.iteration : 0;
    at.tasks.set(nodeKey(p.id, iteration), {
      nodeId: p.id,
      iteration,
      state: typeof p.state === "string" ? p.state : "pending",
      outputTable: typeof p.output === "string" ? p.output : "",
      label: typeof p.label === "string" ? p.label : undefined,
    });
  } else if (el.tag === "loop" && typeof p.id === "string") {
    at.loops.set(p.id, { iteration: typeof p.iteration === "number" ? p.iteration : 0, done: p.done === true });
  }
}

function noteTree(el: XmlElement, at: RunAtFrame): void {
  noteElement(el, at);
  for (const child of el.children) noteTree(child, at);
}

/**
 * The run at frame `frameNo`. FRAME_NOT_FOUND when the run has no such frame; a chain that does
 * not rebuild to its stored hashes is FRAME_CORRUPT.
 */
export async function runAtFrame(db: SmithersDb, runId: string, frameNo: number): Promise<RunAtFrame> {
  const rows = await frames.frameRows(db, runId, 0, frameNo);
  if (!Number.isInteger(frameNo) || frameNo < 0 || rows.length === 0 || rows[rows.length - 1]!.frameNo !== frameNo) {
    throw new SmithersError("FRAME_NOT_FOUND", `Run "${runId}" has no frame ${frameNo}`, { runId, frameNo });
  }
  const at: RunAtFrame = { frameNo, tasks: new Map(), loops: new Map(), tree: { tag: "workflow", props: {}, children: [] }, mounted: new Set() };
  let live: LiveFrame | undefined;
  let expected = 0;
  for (const row of rows) {
    if (row.frameNo !== expected) throw corrupt(runId, expected, "the frame is missing from the chain");
    expected++;
    if (row.encoding !== "delta") {
      live = new LiveFrame(decodeFrameXml(row.xmlJson, { hashChecked: true }));
      noteTree(live.toTree(), at);
    } else {
      if (!live) throw corrupt(runId, row.frameNo, "the chain does not start with a full frame");
      const delta = decodeDelta(row.xmlJson);
      live.apply(delta, { shapeChecked: true });
      for (const op of delta) {
        if (op.op === "insert") noteTree(op.node, at);
        else if (op.op === "set") {
          const el = live.elementAt(op.path);
          if (el) noteElement(el, at);
        }
      }
    }
    if (live.hash !== row.xmlHash) throw corrupt(runId, row.frameNo, "rebuilding it does not give its hash");
  }
  at.tree = live!.toTree();
  const mount = (el: XmlElement) => {
    if (el.tag === "task" && typeof el.props.id === "string")
      at.mounted.add(nodeKey(el.props.id, typeof el.props.iteration === "number" ? el.props.iteration : 0));
    for (const child of el.children) mount(child);
  };
  mount(at.tree);
  return at;
}

const corrupt = (runId: string, frameNo: number, why: string) =>
  new SmithersError("FRAME_CORRUPT", `Frame ${frameNo} of run "${runId}" cannot be rebuilt: ${why}`, { runId, frameNo });

/** Elements whose children run one after another (a later child waits for the earlier ones). */
const SEQUENTIAL = new Set(["workflow", "sequence", "loop", "worktree", "try-catch-finally", "try", "catch", "finally", "saga", "step", "action"]);

/**
 * `ids` and every task downstream of them in the tree: tasks that name one in `dependsOn`, and
 * tasks after one in an enclosing sequence (a Sequence, a loop body, the workflow itself), to
 * a fixed point. Only what the tree declares is known: a render that reads an output without
 * declaring it (`deps`, `needs`, `dependsOn`) is not followed.
 */
export function downstreamOf(tree: XmlElement, ids: Iterable<string>): Set<string> {
  type Where = { parent: XmlElement; index: number }[]; // the task's ancestors, innermost last, with the child index taken
  const places = new Map<string, Where[]>();
  const dependents = new Map<string, string[]>();
  const walk = (el: XmlElement, path: Where) => {
    if (el.tag === "task") {
      const id = String(el.props.id);
      const list = places.get(id) ?? [];
      list.push(path);
      places.set(id, list);
      const deps = el.props.dependsOn;
      if (Array.isArray(deps)) {
        for (const d of deps.map(String)) {
          const list = dependents.get(d);
          if (list) list.push(id);
          else dependents.set(d, [id]);
        }
      }
      return;
    }
    el.children.forEach((child, index) => walk(child, [...path, { parent: el, index }]));
  };
  walk(tree, []);
  const tasksUnder = (el: XmlElement, into: string[]) => {
    if (el.tag === "task") into.push(String(el.props.id));
    for (const child of el.children) tasksUnder(child, into);
  };
  // Per sequential element: the lowest child index whose later siblings were already taken.
  const takenFrom = new Map<XmlElement, number>();
  const reset = new Set<string>();
  const queue = [...ids];
  while (queue.length > 0) {
    const id = queue.pop()!;
    if (reset.has(id)) continue;
    reset.add(id);
    queue.push(...(dependents.get(id) ?? []));
    for (const path of places.get(id) ?? []) {
      for (const { parent, index } of path) {
        if (!SEQUENTIAL.has(parent.tag)) continue;
        const from = takenFrom.get(parent) ?? Number.POSITIVE_INFINITY;
        if (index >= from) continue;
        const later: string[] = [];
        for (let i = index + 1; i < Math.min(from, parent.children.length); i++) tasksUnder(parent.children[i]!, later);
        takenFrom.set(parent, index);
        queue.push(...later);
      }
    }
  }
  return reset;
}
