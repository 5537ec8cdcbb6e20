/**
 * Seeded random frames and edits for the codec's property test. Every edit works on a fresh deep
 * copy, because frames are values (frameHash caches by element object).
 */
import type { PropValue, XmlElement } from "../../src/codec/index.ts";

export type Rng = { next(): number; int(n: number): number; pick<T>(items: readonly T[]): T; chance(p: number): boolean };

/** mulberry32: small, fast, and the same sequence for the same seed everywhere. */
export function createRng(seed: number): Rng {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  return { next, int, pick: (items) => items[int(items.length)]!, chance: (p) => next() < p };
}

// Pieces chosen to break naive XML or JSON handling: entities, CDATA ends, whitespace XML parsers
// normalise, a surrogate pair, lone surrogates, non-characters, controls and the JSON marker.
const PIECES = [
  "a",
  "task",
  "&",
  "<",
  ">",
  '"',
  "'",
  "]]>",
  "\n",
  "\t",
  "\r",
  " ",
  "😀",
  "\ud800",
  "\udfff",
  "=",
  "=x",
  "é",
  "中",
  "\u0000",
  "\u001f",
  "\u007f",
  "\u0085",
  "\u2028",
  "\ufffe",
  "\uffff",
  "&amp;",
  "&#10;",
  "\\",
  "{}",
];
const PROP_NAMES = ["id", "name", "state", "a", "b_c", "x.y", "z-1", "_p", "toString", "valueOf", "hasOwnProperty", "Q9"];
const TAGS = ["task", "group", "loop", "sequence", "parallel", "x-y", "_t", "toString"];
const SHARED_IDS: PropValue[] = ["a", "b", "=x", "", 1, 2.5, true, null];

export function randomString(rng: Rng): string {
  let s = "";
  for (let n = rng.int(5); n > 0; n--) s += rng.pick(PIECES);
  return s;
}

export function randomValue(rng: Rng, depth = 0): PropValue {
  const kind = rng.int(depth < 2 ? 9 : 7);
  switch (kind) {
    case 0:
    case 1:
    case 2:
      return randomString(rng);
    case 3:
      return rng.int(2001) - 1000;
    case 4:
      return rng.chance(0.5) ? (rng.int(2001) - 1000) / 8 : rng.next() * 2e6 - 1e6;
    case 5:
      return rng.chance(0.5);
    case 6:
      return null;
    case 7:
      return Array.from({ length: rng.int(4) }, () => randomValue(rng, depth + 1));
    default: {
      const obj: Record<string, PropValue> = {};
      for (let n = rng.int(4); n > 0; n--) obj[randomString(rng)] = randomValue(rng, depth + 1);
      return obj;
    }
  }
}

function randomId(rng: Rng): PropValue {
  return rng.chance(0.25) ? rng.pick(SHARED_IDS) : `u${rng.int(1e9)}`;
}

export function randomElement(rng: Rng, depth: number): XmlElement {
  const props: Record<string, PropValue> = {};
  if (rng.chance(0.6)) props.id = randomId(rng);
  for (let n = rng.int(4); n > 0; n--) props[rng.pick(PROP_NAMES)] = randomValue(rng);
  const deep = depth > 0 && rng.chance(0.05);
  const count = depth <= 0 ? 0 : deep ? 1 : rng.int(depth > 2 ? 5 : 3);
  const children = Array.from({ length: count }, () => randomElement(rng, deep ? depth + 1 : depth - 1));
  return { tag: rng.pick(TAGS), props, children };
}

export function randomFrame(rng: Rng): XmlElement {
  const root = randomElement(rng, 1 + rng.int(4));
  return { ...root, tag: "workflow" };
}

export function cloneFrame(el: XmlElement): XmlElement {
  const props: Record<string, PropValue> = {};
  for (const [name, value] of Object.entries(el.props)) props[name] = structuredClone(value!);
  return { tag: el.tag, props, children: el.children.map(cloneFrame) };
}

type Place = { el: XmlElement; parent: XmlElement | undefined; index: number };

function places(root: XmlElement): Place[] {
  const out: Place[] = [];
  const visit = (el: XmlElement, parent: XmlElement | undefined, index: number) => {
    out.push({ el, parent, index });
    el.children.forEach((child, i) => visit(child, el, i));
  };
  visit(root, undefined, 0);
  return out;
}

function shuffle<T>(rng: Rng, items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

/** One random edit, in place (call it on a clone). */
function edit(rng: Rng, root: XmlElement): void {
  const all = places(root);
  const inner = all.filter((p) => p.parent !== undefined);
  const { el } = rng.pick(all);
  switch (rng.int(10)) {
    case 0:
      el.children.splice(rng.int(el.children.length + 1), 0, randomElement(rng, rng.int(3)));
      return;
    case 1: {
      if (inner.length === 0) return;
      const gone = rng.pick(inner);
      gone.parent!.children.splice(gone.index, 1);
      return;
    }
    case 2: {
      if (inner.length === 0) return;
      const moving = rng.pick(inner);
      moving.parent!.children.splice(moving.index, 1);
      const target = rng.pick(places(root)).el;
      target.children.splice(rng.int(target.children.length + 1), 0, moving.el);
      return;
    }
    case 3:
      shuffle(rng, el.children);
      return;
    case 4:
    case 5:
      el.props = { ...el.props, [rng.pick(PROP_NAMES)]: randomValue(rng) };
      return;
    case 6: {
      const names = Object.keys(el.props);
      if (names.length > 0) delete el.props[rng.pick(names)];
      return;
    }
    case 7:
      if (el !== root) el.tag = rng.pick(TAGS);
      return;
    case 8:
      el.props = Object.fromEntries(shuffle(rng, Object.entries(el.props)));
      return;
    default: {
      // Ids that collide with a sibling's, or disappear, exercise the unkeyed fallback.
      const sibling = el.children.length > 1 ? rng.pick(el.children) : undefined;
      const target = el.children.length > 0 ? rng.pick(el.children) : el;
      if (sibling && Object.hasOwn(sibling.props, "id") && rng.chance(0.7)) target.props = { ...target.props, id: sibling.props.id! };
      else delete target.props.id;
    }
  }
}

/** The frame after one step: a fresh copy of `prev` with one to three random edits. */
export function randomStep(rng: Rng, prev: XmlElement): XmlElement {
  const next = cloneFrame(prev);
  for (let n = 1 + rng.int(3); n > 0; n--) edit(rng, next);
  return next;
}
