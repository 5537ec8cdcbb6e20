/**
 * What changed in a run's plan between two frames: the nodes mounted and unmounted, and for the
 * nodes in both, their state and other props that changed. A node is an element with an `id`
 * prop (a task, a loop…), keyed by id and iteration; the elements around them (sequence,
 * parallel) are structure and are not listed.
 */
import type { PropValue, XmlElement } from "../../codec/index.ts";

/** A node of a stored frame: its tag, id, iteration (0 outside a loop) and props (jsx's PlanNode is a node of a rendered plan). */
export type FrameNode = { tag: string; id: string; iteration: number; props: Record<string, PropValue> };

export type NodeChange = {
  tag: string;
  id: string;
  iteration: number;
  /** Each changed prop (`state` among them): its value before and after; undefined: absent. */
  props: Record<string, { from: PropValue | undefined; to: PropValue | undefined }>;
};

export type PlanChanges = { mounted: FrameNode[]; unmounted: FrameNode[]; changed: NodeChange[] };

const keyOf = (n: { id: string; iteration: number }) => `${n.id}\u0000${n.iteration}`;

/** The frame's nodes, in document order. */
export function frameNodes(tree: XmlElement): FrameNode[] {
  const out: FrameNode[] = [];
  const walk = (el: XmlElement) => {
    const id = el.props.id;
    if (typeof id === "string") {
      const iteration = typeof el.props.iteration === "number" ? el.props.iteration : 0;
      out.push({ tag: el.tag, id, iteration, props: el.props });
    }
    for (const child of el.children) walk(child);
  };
  walk(tree);
  return out;
}

/** The changes from frame tree `before` to `after` (before undefined: everything in `after` is mounted). */
export function planChanges(before: XmlElement | undefined, after: XmlElement): PlanChanges {
  const old = new Map((before ? frameNodes(before) : []).map((n) => [keyOf(n), n]));
  const now = frameNodes(after);
  const changes: PlanChanges = { mounted: [], unmounted: [], changed: [] };
  for (const node of now) {
    const was = old.get(keyOf(node));
    old.delete(keyOf(node));
    if (!was) {
      changes.mounted.push(node);
      continue;
    }
    const props: NodeChange["props"] = {};
    for (const name of new Set([...Object.keys(was.props), ...Object.keys(node.props)])) {
      const from = was.props[name];
      const to = node.props[name];
      if (JSON.stringify(from) !== JSON.stringify(to)) props[name] = { from, to };
    }
    if (Object.keys(props).length > 0) changes.changed.push({ tag: node.tag, id: node.id, iteration: node.iteration, props });
  }
  changes.unmounted.push(...old.values());
  return changes;
}
