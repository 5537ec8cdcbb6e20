/**
 * frameHash: a 64-bit Merkle hash identifying a frame's XML. An element's hash mixes its tag, its
 * props in order (names and attribute text) and the hash of its children list; the list hash is a
 * balanced binary fold (pair neighbours level by level, an odd last one rises alone), so LiveFrame
 * can update it in O(log n) when one child changes. Two independent murmur3-style 32-bit lanes.
 */
import { encodePropValue } from "./prop-text.ts";
import type { XmlElement } from "./tree.ts";

/** The last result of a hash function below: lanes a and b (int32). Read it before the next call. */
export const out = { a: 0, b: 0 };

let laneA = 0;
let laneB = 0;

// Distinct seeds separate the kinds of input, so a head can never be mistaken for a pair.
const SEED_HEAD = 0x2545f491;
const SEED_ELEMENT = 0x6c8e9cf5;
const SEED_PAIR = 0x1f83d9ab;

function begin(seed: number): void {
  laneA = seed;
  laneB = Math.imul(seed, 0x9e3779b1) ^ 0x5bd1e995;
}

function word(k: number): void {
  let ka = Math.imul(k, 0xcc9e2d51);
  ka = Math.imul((ka << 15) | (ka >>> 17), 0x1b873593);
  laneA ^= ka;
  laneA = (Math.imul((laneA << 13) | (laneA >>> 19), 5) + 0xe6546b64) | 0;
  let kb = Math.imul(k, 0x85ebca77);
  kb = Math.imul((kb << 16) | (kb >>> 16), 0xc2b2ae3d);
  laneB ^= kb;
  laneB = (Math.imul((laneB << 17) | (laneB >>> 15), 9) + 0x38b34ae5) | 0;
}

function text(s: string): void {
  word(s.length);
  for (let i = 0; i < s.length; i += 2) word(s.charCodeAt(i) | (s.charCodeAt(i + 1) << 16));
}

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

function end(): void {
  out.a = fmix(laneA);
  out.b = fmix(laneB ^ laneA);
}

/** Hash of the tag and props: the part of an element that does not depend on its children. */
export function headHash(tag: string, props: XmlElement["props"]): void {
  const names = Object.keys(props);
  headHashTexts(
    tag,
    names,
    names.map((name) => encodePropValue(props[name]!)),
  );
}

/** headHash, given the props' names and their values' encodePropValue texts in the same order. */
export function headHashTexts(tag: string, names: readonly string[], texts: readonly string[]): void {
  begin(SEED_HEAD);
  text(tag);
  word(names.length);
  for (let i = 0; i < names.length; i++) {
    text(names[i]!);
    text(texts[i]!);
  }
  end();
}

export function elementHash(headA: number, headB: number, listA: number, listB: number, count: number): void {
  begin(SEED_ELEMENT);
  word(headA);
  word(headB);
  word(listA);
  word(listB);
  word(count);
  end();
}

export function pairHash(leftA: number, leftB: number, rightA: number, rightB: number): void {
  begin(SEED_PAIR);
  word(leftA);
  word(leftB);
  word(rightA);
  word(rightB);
  end();
}

/** The list hash of no children. */
export const EMPTY_LIST_A = 0x3c6ef372;
export const EMPTY_LIST_B = -0x5ab00ac6;

/** The balanced fold of a list of hashes (its lanes, folded in place). */
export function foldList(as: Int32Array, bs: Int32Array): void {
  let n = as.length;
  if (n === 0) {
    out.a = EMPTY_LIST_A;
    out.b = EMPTY_LIST_B;
    return;
  }
  while (n > 1) {
    let m = 0;
    for (let i = 0; i + 1 < n; i += 2, m++) {
      pairHash(as[i]!, bs[i]!, as[i + 1]!, bs[i + 1]!);
      as[m] = out.a;
      bs[m] = out.b;
    }
    if (n % 2 === 1) {
      as[m] = as[n - 1]!;
      bs[m] = bs[n - 1]!;
      m++;
    }
    n = m;
  }
  out.a = as[0]!;
  out.b = bs[0]!;
}

export const toHex = (a: number, b: number): string => (a >>> 0).toString(16).padStart(8, "0") + (b >>> 0).toString(16).padStart(8, "0");

// Elements are values: once hashed, an element object is assumed never to change.
const cache = new WeakMap<XmlElement, { a: number; b: number }>();

function hashOf(el: XmlElement): { a: number; b: number } {
  const known = cache.get(el);
  if (known) return known;
  const n = el.children.length;
  const as = new Int32Array(n);
  const bs = new Int32Array(n);
  el.children.forEach((child, i) => {
    const h = hashOf(child);
    as[i] = h.a;
    bs[i] = h.b;
  });
  foldList(as, bs);
  const listA = out.a;
  const listB = out.b;
  headHash(el.tag, el.props);
  elementHash(out.a, out.b, listA, listB, n);
  const h = { a: out.a, b: out.b };
  cache.set(el, h);
  return h;
}

/**
 * The frame's 64-bit hash as 16 lowercase hex digits: equal XML gives equal hashes, any change of a
 * tag, prop or child changes it (with high probability). Elements must not be mutated once hashed.
 * @example frameHash({ tag: "workflow", props: { name: "w" }, children: [] }) // e.g. "9f0c6e21d4b3a870"
 */
export function frameHash(tree: XmlElement): string {
  const h = hashOf(tree);
  return toHex(h.a, h.b);
}
