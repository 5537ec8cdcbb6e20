import { describe, expect, test } from "bun:test";
import { checkLimits, limitFor, mergeLimits, parseLimitFlag } from "../../src/engine/core/limits.ts";
import { errorOf } from "../helpers.ts";

describe("checkLimits", () => {
  test("keeps whole numbers > 0 of the known options", () => {
    expect(checkLimits({ a: { concurrency: 2, perMinute: 50, tokensPerMinute: 200_000 } })).toEqual({
      a: { concurrency: 2, perMinute: 50, tokensPerMinute: 200_000 },
    });
    expect(checkLimits(undefined)).toEqual({});
  });

  test("refuses 0, negative, fractional, non-numeric and infinite limits, unknown options, empty entries and keys with INVALID_LIMIT", () => {
    const bad = [
      { a: { concurrency: 0 } },
      { a: { concurrency: -2 } },
      { a: { perMinute: 2.5 } },
      { a: { tokensPerMinute: "100" } },
      { a: { concurrency: Infinity } },
      { a: { concurrency: 2, burst: 5 } },
      { a: {} },
      { a: 3 },
      { "": { concurrency: 1 } },
      [],
      "a=1",
    ];
    for (const limits of bad) expect([limits, errorOf(() => checkLimits(limits)).code]).toEqual([limits, "INVALID_LIMIT"]);
  });
});

describe("parseLimitFlag", () => {
  test("KEY=N sets the concurrency, KEY.OPTION=N any option; a key may hold colons", () => {
    expect(parseLimitFlag("anthropic=2")).toEqual({ anthropic: { concurrency: 2 } });
    expect(parseLimitFlag("anthropic.perMinute=50")).toEqual({ anthropic: { perMinute: 50 } });
    expect(parseLimitFlag("tenant:acme.tokensPerMinute=1000")).toEqual({ "tenant:acme": { tokensPerMinute: 1000 } });
  });

  test("a flag without =, without a key, with an unknown option or a value that is not a whole number > 0 is INVALID_LIMIT", () => {
    for (const flag of [
      "anthropic",
      "=2",
      "anthropic=",
      "anthropic=0",
      "anthropic=-1",
      "anthropic=1.5",
      "anthropic=two",
      "anthropic.burst=3",
      "anthropic.=3",
    ]) {
      expect([flag, errorOf(() => parseLimitFlag(flag)).code]).toEqual([flag, "INVALID_LIMIT"]);
    }
  });
});

describe("mergeLimits and limitFor", () => {
  test("a flag overrides one option of a declared key and keeps the others", () => {
    expect(mergeLimits({ a: { concurrency: 2, perMinute: 50 } }, { a: { concurrency: 4 }, b: { concurrency: 1 } })).toEqual({
      a: { concurrency: 4, perMinute: 50 },
      b: { concurrency: 1 },
    });
  });

  test("a key finds its own entry, else the entry of its prefix before the first colon, else none", () => {
    const limits = { tenant: { concurrency: 1 }, "tenant:vip": { concurrency: 5 } };
    expect(limitFor(limits, "tenant:acme")).toEqual({ concurrency: 1 });
    expect(limitFor(limits, "tenant:vip")).toEqual({ concurrency: 5 });
    expect(limitFor(limits, "tenant")).toEqual({ concurrency: 1 });
    expect(limitFor(limits, "other:acme")).toBeUndefined();
  });
});
