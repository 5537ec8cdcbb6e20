/**
 * encodeDelta: the structural, id-aware diff of two frames. Children are matched by (tag, id) when
 * that pair is unique among the siblings of both frames, otherwise in order per tag. Matched
 * children that keep their relative order are diffed in place; the rest become remove/insert pairs,
 * so a move is two ops rather than a cascade of prop sets.
 */
import { SmithersError } from "../errors/index.ts";
import type { FrameDelta, FrameOp } from "./ops.ts";
import { checkName, checkTree, checkValue, sameValue, type PropValue, type XmlElement } from "./tree.ts";
import type { XmlShape } from "./xml.ts";

type Props = XmlElement["props"];

// prev's prop names, reused from call to call: the usual diff of a large tree finds every element's
// props unchanged, and an array of names per element would be most of what it allocates.
const scratchNames: string[] = [];

/** Same names in the same order with the same values (props are plain objects: for-in gives their own names, in order). */
function sameProps(prev: Props, next: Props): boolean {
  let count = 0;
  for (const name in prev) scratchNames[count++] = name;
  let i = 0;
  for (const name in next) {
    if (i >= count || name !== scratchNames[i] || !sameValue(prev[name]!, next[name]!)) return false;
    i++;
  }
  return i === count;
}

// `stack` is the caller's working path; ops get a copy of it.
function diffProps(prev: Props, next: Props, stack: number[], ops: FrameOp[]): void {
  if (prev === next || sameProps(prev, next)) return;
  const prevNames = Object.keys(prev);
  const nextNames = Object.keys(next);
  const path = stack.slice();
  // A set on a new prop appends it, so only a prefix of next's order can stay where it is.
  let kept = 0;
  for (let last = -1; kept < nextNames.length; kept++) {
    const at = prevNames.indexOf(nextNames[kept]!);
    if (at <= last) break;
    last = at;
  }
  // Names are unique within an element, so a prev name stays iff it is one of next's first `kept`.
  for (const name of prevNames) {
    const at = nextNames.indexOf(name);
    if (at < 0 || at >= kept) ops.push({ op: "remove", path, name });
  }
  for (let i = 0; i < nextNames.length; i++) {
    const name = nextNames[i]!;
    const value = next[name] as PropValue;
    if (i < kept && sameValue(prev[name]!, value)) continue;
    checkName(name, "prop");
    checkValue(value, name);
    ops.push({ op: "set", path, name, value });
  }
}

// An injective text for an id value, cheap for the usual plain-string id.
function idText(id: PropValue): string {
  if (typeof id === "string" && !id.startsWith("\u0000")) return id;
  return `\u0000${JSON.stringify(id)}`;
}

const DUPLICATE = -2;

/** Per tag, each id's text -> the index of the only child holding it, or DUPLICATE. */
function indexIds(children: readonly XmlShape[], texts: (string | undefined)[]): Map<string, Map<string, number>> {
  const byTag = new Map<string, Map<string, number>>();
  for (let i = 0; i < children.length; i++) {
    const child = children[i]!;
    const id = child.props.id;
    const text = id === undefined || !Object.hasOwn(child.props, "id") ? undefined : idText(id);
    texts.push(text);
    if (text === undefined) continue;
    let ids = byTag.get(child.tag);
    if (!ids) byTag.set(child.tag, (ids = new Map()));
    ids.set(text, ids.has(text) ? DUPLICATE : i);
  }
  return byTag;
}

/** For each next child, the index of the prev child it continues, or -1. */
function matchChildren(prev: readonly XmlShape[], next: readonly XmlShape[]): Int32Array {
  const prevTexts: (string | undefined)[] = [];
  const nextTexts: (string | undefined)[] = [];
  const prevIds = indexIds(prev, prevTexts);
  const nextIds = indexIds(next, nextTexts);
  // An id is a key only when no sibling on either side shares it (with the same tag).
  const keyed = (tag: string, text: string | undefined): boolean =>
    text !== undefined && prevIds.get(tag)?.get(text) !== DUPLICATE && nextIds.get(tag)?.get(text) !== DUPLICATE;

  const unkeyedByTag = new Map<string, number[]>();
  for (let i = 0; i < prev.length; i++) {
    const tag = prev[i]!.tag;
    if (keyed(tag, prevTexts[i])) continue;
    const queue = unkeyedByTag.get(tag);
    if (queue) queue.push(i);
    else unkeyedByTag.set(tag, [i]);
  }
  const cursor = new Map<string, number>();
  const match = new Int32Array(next.length).fill(-1);
  for (let j = 0; j < next.length; j++) {
    const tag = next[j]!.tag;
    const text = nextTexts[j];
    if (keyed(tag, text)) {
      match[j] = prevIds.get(tag)?.get(text!) ?? -1;
      continue;
    }
    const queue = unkeyedByTag.get(tag);
    const at = cursor.get(tag) ?? 0;
    if (queue && at < queue.length) {
      match[j] = queue[at]!;
      cursor.set(tag, at + 1);
    }
  }
  return match;
}

/** Which next children stay: the longest run of matches whose prev indices increase. */
function keptInOrder(match: Int32Array): Uint8Array {
  const tails: number[] = []; // tails[k]: next index ending the best increasing run of length k+1
  const before = new Int32Array(match.length).fill(-1);
  for (let j = 0; j < match.length; j++) {
    const p = match[j]!;
    if (p < 0) continue;
    let lo = 0;
    let hi = tails.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (match[tails[mid]!]! < p) lo = mid + 1;
      else hi = mid;
    }
    before[j] = lo > 0 ? tails[lo - 1]! : -1;
    tails[lo] = j;
  }
  const kept = new Uint8Array(match.length);
  for (let j = tails.length > 0 ? tails[tails.length - 1]! : -1; j >= 0; j = before[j]!) kept[j] = 1;
  return kept;
}

// Same (tag, id) sequence on both sides: matching would pair every child with its own index.
function aligned(prev: readonly XmlShape[], next: readonly XmlShape[]): boolean {
  if (prev.length !== next.length) return false;
  for (let i = 0; i < prev.length; i++) {
    const a = prev[i]!;
    const b = next[i]!;
    if (a === b) continue;
    if (a.tag !== b.tag || Object.hasOwn(a.props, "id") !== Object.hasOwn(b.props, "id")) return false;
    if (Object.hasOwn(a.props, "id") && !sameValue(a.props.id!, b.props.id!)) return false;
  }
  return true;
}

function diffChild(prev: XmlShape, next: XmlElement, stack: number[], index: number, ops: FrameOp[]): void {
  if (prev === next) return;
  stack.push(index);
  diffElement(prev, next, stack, ops);
  stack.pop();
}

function diffChildren(prev: readonly XmlShape[], next: readonly XmlElement[], stack: number[], ops: FrameOp[]): void {
  if (prev === next) return;
  if (aligned(prev, next)) {
    for (let i = 0; i < next.length; i++) diffChild(prev[i]!, next[i]!, stack, i, ops);
    return;
  }
  const match = matchChildren(prev, next);
  const kept = keptInOrder(match);
  const stays = new Uint8Array(prev.length);
  for (let j = 0; j < next.length; j++) if (kept[j]) stays[match[j]!] = 1;
  // Removes from the back keep the lower indices valid; inserts in final order land where they belong.
  for (let i = prev.length - 1; i >= 0; i--) if (!stays[i]) ops.push({ op: "remove", path: [...stack, i] });
  const path = stack.slice();
  for (let j = 0; j < next.length; j++) {
    if (kept[j]) continue;
    checkTree(next[j]!);
    ops.push({ op: "insert", path, index: j, node: next[j]! });
  }
  for (let j = 0; j < next.length; j++) if (kept[j]) diffChild(prev[match[j]!]!, next[j]!, stack, j, ops);
}

function diffElement(prev: XmlShape, next: XmlElement, stack: number[], ops: FrameOp[]): void {
  diffProps(prev.props, next.props, stack, ops);
  diffChildren(prev.children, next.children, stack, ops);
}

/**
 * The ops that turn `prev` into `next`: applyDelta(prev, encodeDelta(prev, next)) deep-equals next,
 * and encodeDelta(t, t) is []. A delta cannot replace the root, so differing root tags throw
 * INVALID_FRAME (write a keyframe instead); so do names and values next could not be encoded with.
 * `prev` is only read: a frame, or a LiveFrame's view().
 * @example encodeDelta(before, after) // [{ op: "set", path: [0, 4], name: "state", value: "finished" }]
 */
export function encodeDelta(prev: XmlShape, next: XmlElement): FrameDelta {
  if (prev.tag !== next.tag) {
    throw new SmithersError("INVALID_FRAME", `Frame root changed from <${prev.tag}> to <${next.tag}>; a delta cannot express that, write a keyframe`);
  }
  const ops: FrameOp[] = [];
  if (prev !== next) diffElement(prev, next, [], ops);
  return ops;
}
