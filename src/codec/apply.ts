/**
 * applyDelta: a pure application of a delta. The result shares every untouched subtree with `prev`
 * and `prev` itself is never changed; any op that does not fit the tree throws FRAME_CORRUPT.
 */
import { corrupt, parseDelta, type FrameDelta, type FrameOp } from "./ops.ts";
import type { XmlElement } from "./tree.ts";

type Draft = { owned: WeakSet<XmlElement> };

// Copy an element the first time an op touches it; later ops in the same delta edit the copy.
function own(draft: Draft, el: XmlElement): XmlElement {
  if (draft.owned.has(el)) return el;
  const copy = { tag: el.tag, props: el.props, children: el.children.slice() };
  draft.owned.add(copy);
  return copy;
}

function walk(draft: Draft, root: XmlElement, path: readonly number[], at: number): XmlElement {
  let node = root;
  for (let depth = 0; depth < path.length; depth++) {
    const i = path[depth]!;
    const child = node.children[i];
    if (!child) throw corrupt(`Frame delta op ${at}: path [${path.join(",")}] does not exist (no child ${i} at depth ${depth})`);
    node = node.children[i] = own(draft, child);
  }
  return node;
}

function applyOp(draft: Draft, root: XmlElement, op: FrameOp, at: number): void {
  switch (op.op) {
    case "set": {
      const node = walk(draft, root, op.path, at);
      node.props = { ...node.props, [op.name]: op.value };
      return;
    }
    case "remove": {
      if (op.name !== undefined) {
        const node = walk(draft, root, op.path, at);
        if (!Object.hasOwn(node.props, op.name)) throw corrupt(`Frame delta op ${at}: no prop ${op.name} to remove at [${op.path.join(",")}]`);
        const { [op.name]: _gone, ...rest } = node.props;
        node.props = rest;
        return;
      }
      if (op.path.length === 0) throw corrupt(`Frame delta op ${at}: the root element cannot be removed`);
      const parent = walk(draft, root, op.path.slice(0, -1), at);
      const i = op.path[op.path.length - 1]!;
      if (i >= parent.children.length) throw corrupt(`Frame delta op ${at}: path [${op.path.join(",")}] does not exist`);
      parent.children.splice(i, 1);
      return;
    }
    case "insert": {
      const parent = walk(draft, root, op.path, at);
      if (op.index > parent.children.length) {
        throw corrupt(`Frame delta op ${at}: insert index ${op.index} is past the ${parent.children.length} children at [${op.path.join(",")}]`);
      }
      parent.children.splice(op.index, 0, op.node);
    }
  }
}

/**
 * The frame `delta` turns `prev` into; FRAME_CORRUPT for a malformed op, a path that does not
 * exist, an index out of range or a prop that is not there to remove.
 * @example applyDelta(frame, [{ op: "set", path: [0], name: "state", value: "running" }])
 */
export function applyDelta(prev: XmlElement, delta: FrameDelta): XmlElement {
  const ops = parseDelta(delta);
  if (ops.length === 0) return prev;
  const draft: Draft = { owned: new WeakSet() };
  const root = own(draft, prev);
  ops.forEach((op, at) => applyOp(draft, root, op, at));
  return root;
}
