/**
 * LiveFrame: the mutable working copy of a frame that the engine edits one delta at a time and a
 * reader replays deltas into. Every element keeps its hash and a segment tree of its children's
 * hashes, so a `set` costs O(depth · log fanout) and `hash` is read in O(1).
 */
import { ChildHashTree } from "./hash-tree.ts";
import { EMPTY_LIST_A, EMPTY_LIST_B, elementHash, headHashTexts, out, toHex } from "./hash.ts";
import { encodePropValue } from "./prop-text.ts";
import { corrupt, parseDelta, type FrameDelta, type FrameOp } from "./ops.ts";
import { SmithersError } from "../errors/index.ts";
import { checkName, checkTree, checkValue, frozenCopy, type PropValue, type XmlElement } from "./tree.ts";
import { elementXml, type XmlShape } from "./xml.ts";

type Props = XmlElement["props"];

type LiveNode = {
  tag: string;
  /** Frozen and replaced on every change, so snapshots and undo can share it. */
  props: Props;
  /**
   * encodePropValue of each prop, in the props' order, made when the head is hashed and kept for
   * the next hash and the XML; undefined once a prop is added or removed. A `set` replaces one.
   */
  texts: string[] | undefined;
  /** NO_CHILDREN (shared, frozen) while it has none: a frame of a large run is mostly leaves. */
  children: LiveNode[];
  list: ChildHashTree | undefined;
  headA: number;
  headB: number;
  a: number;
  b: number;
  snapshot: XmlElement | undefined;
  // Work left for rehash() after a delta: which parts of this element's hash are out of date.
  stale: boolean;
  headStale: boolean;
  listStale: boolean;
  dirtyChildren: number[] | undefined;
};

function freezeProps(props: Props): Props {
  const copy: Record<string, PropValue> = {};
  for (const name of Object.keys(props)) copy[name] = frozenCopy(props[name]!);
  return Object.freeze(copy);
}

// Freezes a checked JSON value in place (what frozenCopy gives, without the copy).
function freezeValue(value: PropValue): void {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return;
  if (Array.isArray(value)) value.forEach(freezeValue);
  else for (const key of Object.keys(value)) freezeValue(value[key]!);
  Object.freeze(value);
}

function adoptProps(props: Props): Props {
  for (const name of Object.keys(props)) freezeValue(props[name]!);
  return Object.freeze(props);
}

/** The children of every childless element until an insert gives it its own list. */
const NO_CHILDREN: readonly LiveNode[] = Object.freeze([]);

function rehead(node: LiveNode): void {
  const names = Object.keys(node.props);
  let texts = node.texts;
  if (texts === undefined) {
    texts = node.texts = new Array<string>(names.length);
    for (let i = 0; i < names.length; i++) texts[i] = encodePropValue(node.props[names[i]!]!);
  }
  headHashTexts(node.tag, names, texts);
  node.headA = out.a;
  node.headB = out.b;
}

function relist(node: LiveNode): void {
  const n = node.children.length;
  if (n === 0) {
    node.list = undefined;
    return;
  }
  const list = new ChildHashTree(n);
  node.children.forEach((child, i) => list.leaf(i, child.a, child.b));
  list.build();
  node.list = list;
}

function rehashSelf(node: LiveNode): void {
  const list = node.list;
  elementHash(node.headA, node.headB, list ? list.rootA : EMPTY_LIST_A, list ? list.rootB : EMPTY_LIST_B, node.children.length);
  node.a = out.a;
  node.b = out.b;
}

function build(el: XmlElement, adopt: boolean): LiveNode {
  const node: LiveNode = {
    tag: el.tag,
    props: adopt ? adoptProps(el.props) : freezeProps(el.props),
    texts: undefined,
    children: el.children.length === 0 ? (NO_CHILDREN as LiveNode[]) : el.children.map((child) => build(child, adopt)),
    list: undefined,
    headA: 0,
    headB: 0,
    a: 0,
    b: 0,
    snapshot: undefined,
    stale: false,
    headStale: false,
    listStale: false,
    dirtyChildren: undefined,
  };
  rehead(node);
  relist(node);
  rehashSelf(node);
  return node;
}

/** Bring the hashes of every stale element up to date, children first. */
function rehash(node: LiveNode): void {
  if (!node.stale) return;
  if (node.headStale) rehead(node);
  if (node.listStale) {
    for (const child of node.children) rehash(child);
    relist(node);
  } else if (node.dirtyChildren) {
    const list = node.list!;
    for (const i of node.dirtyChildren) {
      const child = node.children[i]!;
      rehash(child);
      list.leaf(i, child.a, child.b);
    }
    list.refresh(node.dirtyChildren);
  }
  rehashSelf(node);
  node.stale = node.headStale = node.listStale = false;
  node.dirtyChildren = undefined;
}

function snapshot(node: LiveNode): XmlElement {
  if (node.snapshot) return node.snapshot;
  const el: XmlElement = Object.freeze({ tag: node.tag, props: node.props, children: Object.freeze(node.children.map(snapshot)) as XmlElement[] });
  node.snapshot = el;
  return el;
}

/**
 * A frame that applies deltas in place. `apply` is atomic: when an op does not fit, the ops before
 * it are undone and the frame is exactly as it was before the call.
 * @example
 * const live = new LiveFrame(root);
 * live.apply([{ op: "set", path: [0, 3], name: "state", value: "running" }]);
 * live.hash; // equals frameHash(live.toTree())
 */
export class LiveFrame {
  private readonly root: LiveNode;
  private hex: string | undefined;

  /**
   * Copies `tree`; INVALID_FRAME if it holds a name or value no frame can have. `adopt`: the
   * caller gives the tree away (it was built for this frame and nothing else holds it), so its
   * props objects and values are frozen in place instead of copied.
   */
  constructor(tree: XmlElement, options: { adopt?: boolean } = {}) {
    checkTree(tree);
    this.root = build(tree, options.adopt === true);
  }

  /**
   * Applies the delta's ops in order; FRAME_CORRUPT (and no change) when one does not fit or
   * would leave a tree no frame can hold (a bad name or value, too deep). `shapeChecked`: the
   * delta came from encodeDelta or decodeDeltaJson (or the engine's own ops), so the Zod check
   * of its shape is skipped; the fit and those limits are checked either way.
   */
  apply(delta: FrameDelta, options: { shapeChecked?: boolean } = {}): void {
    const ops = options.shapeChecked ? delta : parseDelta(delta);
    const undo: (() => void)[] = [];
    try {
      for (let at = 0; at < ops.length; at++) this.applyOp(ops[at]!, at, undo);
    } catch (error) {
      for (let i = undo.length - 1; i >= 0; i--) undo[i]!();
      throw error;
    } finally {
      rehash(this.root);
      this.hex = undefined;
    }
  }

  /** The hash frameHash would give for toTree(), kept up to date by apply. */
  get hash(): string {
    return (this.hex ??= toHex(this.root.a, this.root.b));
  }

  /** An immutable (frozen) snapshot; unchanged subtrees are shared between successive snapshots. */
  toTree(): XmlElement {
    return snapshot(this.root);
  }

  /**
   * The working copy itself, read-only, to diff a new tree against (encodeDelta(live.view(), next))
   * without a snapshot; valid until the next apply.
   */
  view(): XmlShape {
    return this.root;
  }

  /** encodeFrameXml(toTree()), written from the working copy (checked on the way in) without a snapshot. */
  toXml(): string {
    return elementXml(this.root, true);
  }

  /** A frozen snapshot of the element at `path`, or undefined when there is none. */
  elementAt(path: readonly number[]): XmlElement | undefined {
    const node = this.nodeAt(path);
    return node && snapshot(node);
  }

  /** Prop `name` of the element at `path` (undefined when either is missing), without a snapshot. */
  propAt(path: readonly number[], name: string): PropValue | undefined {
    return this.nodeAt(path)?.props[name];
  }

  private nodeAt(path: readonly number[]): LiveNode | undefined {
    let node: LiveNode | undefined = this.root;
    for (let d = 0; node && d < path.length; d++) node = node.children[path[d]!];
    return node;
  }

  // Marks every element on the path for rehash and drops its snapshot before anything changes.
  private walk(path: readonly number[], at: number): LiveNode {
    let node = this.root;
    for (let depth = 0; depth <= path.length; depth++) {
      node.stale = true;
      node.snapshot = undefined;
      if (depth === path.length) break;
      const i = path[depth]!;
      const child = node.children[i];
      if (!child) throw corrupt(`Frame delta op ${at}: path [${path.join(",")}] does not exist (no child ${i} at depth ${depth})`);
      (node.dirtyChildren ??= []).push(i);
      node = child;
    }
    return node;
  }

  private applyOp(op: FrameOp, at: number, undo: (() => void)[]): void {
    try {
      if (op.op === "set") {
        checkName(op.name, "prop");
        checkValue(op.value, op.name);
      } else if (op.op === "insert") checkTree(op.node, op.path.length + 2);
    } catch (error) {
      throw SmithersError.is(error, "INVALID_FRAME") ? corrupt(`Frame delta op ${at}: ${error.message}`, error) : error;
    }
    switch (op.op) {
      case "set": {
        const node = this.walk(op.path, at);
        const before = node.props;
        const beforeTexts = node.texts;
        const value = frozenCopy(op.value);
        node.props = Object.freeze({ ...before, [op.name]: value });
        // A prop set in place keeps its place in the order: only its own text changes.
        const place = beforeTexts && Object.hasOwn(before, op.name) ? Object.keys(before).indexOf(op.name) : -1;
        if (place >= 0) {
          node.texts = beforeTexts!.slice();
          node.texts[place] = encodePropValue(value);
        } else node.texts = undefined;
        node.headStale = true;
        undo.push(() => {
          node.props = before;
          node.texts = beforeTexts;
        });
        return;
      }
      case "remove": {
        if (op.name !== undefined) {
          const node = this.walk(op.path, at);
          const before = node.props;
          if (!Object.hasOwn(before, op.name)) throw corrupt(`Frame delta op ${at}: no prop ${op.name} to remove at [${op.path.join(",")}]`);
          const { [op.name]: _gone, ...rest } = before;
          const beforeTexts = node.texts;
          node.props = Object.freeze(rest);
          node.texts = undefined;
          node.headStale = true;
          undo.push(() => {
            node.props = before;
            node.texts = beforeTexts;
          });
          return;
        }
        if (op.path.length === 0) throw corrupt(`Frame delta op ${at}: the root element cannot be removed`);
        const parent = this.walk(op.path.slice(0, -1), at);
        const i = op.path[op.path.length - 1]!;
        if (i >= parent.children.length) throw corrupt(`Frame delta op ${at}: path [${op.path.join(",")}] does not exist`);
        const [gone] = parent.children.splice(i, 1);
        parent.listStale = true;
        undo.push(() => void parent.children.splice(i, 0, gone!));
        return;
      }
      case "insert": {
        const parent = this.walk(op.path, at);
        if (op.index > parent.children.length) {
          throw corrupt(`Frame delta op ${at}: insert index ${op.index} is past the ${parent.children.length} children at [${op.path.join(",")}]`);
        }
        if (parent.children === NO_CHILDREN) parent.children = [];
        parent.children.splice(op.index, 0, build(op.node, false));
        parent.listStale = true;
        undo.push(() => void parent.children.splice(op.index, 1));
      }
    }
  }
}
