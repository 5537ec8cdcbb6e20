/**
 * The codec's laws over random frame histories: every step's delta reproduces the next frame, in
 * memory, through its stored text (the compact form, and the older JSON one still read) and in a
 * LiveFrame; every frame survives XML; hashes identify frames.
 * Reproduce a failure with CODEC_SEED=<seed> (the seed is in the failure message).
 */
import { describe, expect, test } from "bun:test";
import { XMLBuilder, XMLValidator } from "fast-xml-parser";
import {
  applyDelta,
  decodeDelta,
  decodeDeltaJson,
  decodeDeltaText,
  decodeFrameXml,
  encodeDelta,
  encodeDeltaJson,
  encodeDeltaText,
  encodeFrameXml,
  frameHash,
  LiveFrame,
  type XmlElement,
} from "../../src/codec/index.ts";
import { encodePropValue } from "../../src/codec/prop-text.ts";
import { FRAME_XML_OPTIONS } from "../../src/codec/xml.ts";
import { cloneFrame, createRng, randomFrame, randomStep } from "./random-frames.ts";

const SEQUENCES = 1000;
const STEPS = 5;
const FIRST_SEED = 20_240_601;
const only = process.env.CODEC_SEED === undefined ? undefined : Number(process.env.CODEC_SEED);

// The oracle of the hand-written encoder: fast-xml-parser's builder with the codec's options, over
// its "preserveOrder" shape ({ tag: children, ":@": attributes }).
const builder = new XMLBuilder(FRAME_XML_OPTIONS);
type Ordered = Record<string, unknown>;
function toOrdered(el: XmlElement): Ordered {
  const node: Ordered = { [el.tag]: el.children.map(toOrdered) };
  const names = Object.keys(el.props);
  if (names.length > 0) node[":@"] = Object.fromEntries(names.map((name) => [name, encodePropValue(el.props[name]!)]));
  return node;
}
const builderFrameXml = (root: XmlElement): string => builder.build([toOrdered(root)]) as string;

// JSON text compares prop order too, which toEqual ignores; the generator never makes -0 or NaN.
// expect() only on a mismatch: tens of thousands of passing matcher calls would dominate the run.
function same(actual: unknown, expected: unknown): void {
  const a = JSON.stringify(actual);
  const b = JSON.stringify(expected);
  if (a !== b) expect(a).toBe(b);
}

/** Bytes of every delta in both stored forms, over the whole run. */
const deltaBytes = { text: 0, json: 0 };

function checkStep(prev: XmlElement, prevJson: string, next: XmlElement, live: LiveFrame, hashes: Map<string, string>): void {
  const delta = encodeDelta(prev, next);
  same(applyDelta(prev, delta), next);
  const prevNow = JSON.stringify(prev);
  if (prevNow !== prevJson) expect(prevNow).toBe(prevJson);

  const json = encodeDeltaJson(delta);
  same(decodeDeltaJson(json), delta);
  same(decodeDelta(json), delta);
  const text = encodeDeltaText(delta);
  // decodeDelta tells the forms apart by the first character; no text delta may look like JSON.
  if (text.startsWith("[")) expect(text).not.toStartWith("[");
  const decoded = decodeDeltaText(text);
  same(decoded, delta);
  same(decodeDelta(text), delta);
  if (text !== encodeDeltaText(delta, true)) expect(encodeDeltaText(delta, true)).toBe(text);
  deltaBytes.text += Buffer.byteLength(text);
  deltaBytes.json += Buffer.byteLength(json);

  const xml = encodeFrameXml(next);
  // Stored keyframes keep one text whoever writes them: the hand-written encoder and the library's builder agree byte for byte.
  const built = builderFrameXml(next);
  if (built !== xml) expect(xml).toBe(built);
  const verdict = XMLValidator.validate(xml);
  if (verdict !== true) expect(verdict.err.msg).toBe("");
  same(decodeFrameXml(xml), next);

  live.apply(decoded);
  same(live.toTree(), next);
  const hash = frameHash(next);
  if (live.hash !== hash) expect(live.hash).toBe(hash);
  const liveXml = live.toXml();
  if (liveXml !== xml) expect(liveXml).toBe(xml);

  const seen = hashes.get(hash);
  if (seen !== undefined && seen !== xml) expect(seen).toBe(xml);
  hashes.set(hash, xml);
}

function runSequence(seed: number, hashes: Map<string, string>): void {
  const rng = createRng(seed);
  let prev = randomFrame(rng);
  let prevJson = JSON.stringify(prev);
  const live = new LiveFrame(prev);
  expect(live.hash).toBe(frameHash(prev));
  expect(encodeDelta(prev, cloneFrame(prev))).toEqual([]);
  for (let step = 0; step < STEPS; step++) {
    const next = randomStep(rng, prev);
    try {
      checkStep(prev, prevJson, next, live, hashes);
    } catch (error) {
      throw new Error(`CODEC_SEED=${seed} step ${step}: ${(error as Error).message}`, { cause: error });
    }
    prev = next;
    prevJson = JSON.stringify(next);
  }
}

describe("the frame codec", () => {
  test(`holds its round-trip, delta and hash laws over ${SEQUENCES} random frame histories`, () => {
    const hashes = new Map<string, string>();
    const seeds = only === undefined ? Array.from({ length: SEQUENCES }, (_, i) => FIRST_SEED + i) : [only];
    for (const seed of seeds) runSequence(seed, hashes);
    expect(hashes.size).toBeGreaterThan(only === undefined ? SEQUENCES * 3 : 1);
    // The reason the text form exists: over many histories it is well under the JSON's size.
    if (only === undefined) expect(deltaBytes.text / deltaBytes.json).toBeLessThan(0.6);
  }, 30_000);
});
