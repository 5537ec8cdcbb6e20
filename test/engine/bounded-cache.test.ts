import { describe, expect, test } from "bun:test";
import { BoundedCache, estimateBytes } from "../../src/engine/core/index.ts";

describe("estimateBytes", () => {
  test("a row of scalars and the same scalars nested in an object are counted by the same rules", () => {
    // 16 per object, 8 + key per member, 16 + length per string, 8 per other scalar.
    expect(estimateBytes({ a: "xy", n: 1 })).toBe(16 + (8 + 1 + 16 + 2) + (8 + 1 + 8));
    expect(estimateBytes({ a: "xy", o: { n: 1 } })).toBe(16 + (8 + 1 + 16 + 2) + (8 + 1 + 16 + (8 + 1 + 8)));
    expect(estimateBytes({ a: null, b: true, c: undefined })).toBe(16 + 3 * (8 + 1 + 8));
    expect(estimateBytes({ list: [1, "ab"] })).toBe(16 + 8 + 4 + (16 + 8 * 2) + 8 + (16 + 2));
    expect(estimateBytes("abc")).toBe(16 + 3);
  });

  test("a cache judged by it drops the oldest rows once their estimate passes its bytes", () => {
    const row = (i: number) => ({ runId: "r", nodeId: `t${i}`, iteration: 0, n: i });
    const cache = new BoundedCache<ReturnType<typeof row>>({ maxEntries: 100, maxBytes: estimateBytes(row(0)) * 3 }, estimateBytes);
    for (let i = 0; i < 5; i++) cache.set(`k${i}`, row(i));
    expect(cache.get("k0")).toBeUndefined();
    expect(cache.get("k1")).toBeUndefined();
    expect(cache.get("k4")).toEqual(row(4));
    expect(cache.stats().entries).toBe(3);
  });
});
