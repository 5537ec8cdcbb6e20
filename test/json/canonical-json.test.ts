/** canonicalJson: one text per value; the loose mode's texts are the ones stored digests were made with, and never change. */
import { describe, expect, test } from "bun:test";
import { canonicalJson, hashJson, isPlainObject, sha256Hex, UnstableJsonError } from "../../src/json/index.ts";

/** The digest text inputs and definitions were stored with before canonicalJson existed (engine/run/run-setup.ts's stableJson): the oracle. */
function storedText(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(storedText).join(",")}]`;
  if (value && typeof value === "object" && !(value instanceof Date)) {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${storedText(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** A random JSON-ish value, with the odd cases inputs carry (dates, undefined fields, NaN, functions, a Map). */
function randomValue(rand: () => number, depth = 0): unknown {
  const pick = Math.floor(rand() * (depth > 3 ? 8 : 11));
  switch (pick) {
    case 0:
      return null;
    case 1:
      return rand() < 0.5;
    case 2:
      return Math.round((rand() - 0.5) * 1e6) / 100;
    case 3:
      return ["", "a", "ü", 'q"uote', "line\nbreak", "\u2028"][Math.floor(rand() * 6)];
    case 4:
      return new Date(Math.floor(rand() * 2e12));
    case 5:
      return [Number.NaN, Number.POSITIVE_INFINITY, -0][Math.floor(rand() * 3)];
    case 6:
      return undefined;
    case 7:
      return () => 1;
    case 8:
      return Array.from({ length: Math.floor(rand() * 4) }, () => randomValue(rand, depth + 1));
    case 9:
      return new Map([["k", 1]]);
    default: {
      const keys = ["b", "a", "z", "é", "10", "2", "A"].filter(() => rand() < 0.5);
      return Object.fromEntries(keys.map((k) => [k, randomValue(rand, depth + 1)]));
    }
  }
}

function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe("canonicalJson", () => {
  test("loose: over 2,000 random values, the text is the one stored digests were made with", () => {
    const rand = seeded(31);
    for (let i = 0; i < 2_000; i++) {
      const value = randomValue(rand);
      expect(canonicalJson(value, "loose")).toBe(storedText(value));
    }
  });

  test("equal values in another key order give one text and one digest", () => {
    expect(canonicalJson({ b: 1, a: { d: 2, c: [1, { y: 1, x: 2 }] } })).toBe('{"a":{"c":[1,{"x":2,"y":1}],"d":2},"b":1}');
    expect(hashJson({ b: 1, a: 2 })).toBe(hashJson({ a: 2, b: 1 }));
    expect(hashJson({ a: 1 })).toBe(sha256Hex('{"a":1}'));
    expect(sha256Hex(new TextEncoder().encode("abc"))).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  });

  test("strict: a value without one JSON form throws UnstableJsonError naming where it is", () => {
    for (const [value, path, what] of [
      [{ f: () => 1 }, "$.f", "a function"],
      [[1, Number.NaN], "$[1]", "NaN"],
      [{ m: new Map() }, "$.m", "a Map"],
    ] as const) {
      let thrown: unknown;
      try {
        canonicalJson(value);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(UnstableJsonError);
      expect([(thrown as UnstableJsonError).path, (thrown as UnstableJsonError).what]).toEqual([path, what]);
    }
  });

  test("isPlainObject: object literals and null-prototype objects only", () => {
    expect([{}, Object.create(null), { a: 1 }].map(isPlainObject)).toEqual([true, true, true]);
    expect([[], new Date(), new Map(), null, "x", 1, class {}].map(isPlainObject)).toEqual([false, false, false, false, false, false, false]);
  });
});
