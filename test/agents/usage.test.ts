import { describe, expect, test } from "bun:test";
import { addUsage, normalizeUsage, priceUsage } from "../../src/agents/index.ts";
import { SpendMeter } from "../../src/engine/attempt/spend.ts";

const pricing = { main: { inputPerMTok: 2, outputPerMTok: 10 }, router: { inputPerMTok: 0.1, outputPerMTok: 0.4 } };
const split = { main: { inputTokens: 700, outputTokens: 70 }, router: { inputTokens: 50, outputTokens: 10 } };

describe("priceUsage", () => {
  test("prices each model of a breakdown at its own price", () => {
    const priced = priceUsage({ inputTokens: 750, outputTokens: 80, model: "main", models: split }, pricing);
    expect(priced?.costUsd).toBeCloseTo((700 * 2 + 70 * 10 + 50 * 0.1 + 10 * 0.4) / 1e6, 12);
  });

  test("leaves the cost unknown when a model that used tokens has no price, whatever the answering model's", () => {
    expect(priceUsage({ inputTokens: 750, outputTokens: 80, model: "main", models: split }, { main: pricing.main })?.costUsd).toBeUndefined();
  });

  test("ignores a model of the breakdown that used no tokens", () => {
    const usage = { inputTokens: 700, outputTokens: 70, model: "main", models: { main: split.main, unused: { inputTokens: 0, outputTokens: 0 } } };
    expect(priceUsage(usage, { main: pricing.main })?.costUsd).toBeCloseTo((700 * 2 + 70 * 10) / 1e6, 12);
  });
});

describe("addUsage and normalizeUsage", () => {
  test("a sum keeps a breakdown only when both calls had one, added model by model", () => {
    const a = { inputTokens: 750, outputTokens: 80, models: split };
    const b = { inputTokens: 100, outputTokens: 5, models: { main: { inputTokens: 100, outputTokens: 5 } } };
    expect(addUsage(a, b)?.models).toEqual({ main: { inputTokens: 800, outputTokens: 75 }, router: { inputTokens: 50, outputTokens: 10 } });
    expect(addUsage(a, { inputTokens: 1 })?.models).toBeUndefined();
  });

  test("normalizeUsage keeps a valid breakdown and drops a malformed one", () => {
    expect(normalizeUsage({ inputTokens: 750, models: split })?.models).toEqual(split);
    expect(normalizeUsage({ inputTokens: 750, models: { main: 3 } })?.models).toBeUndefined();
  });
});

describe("SpendMeter", () => {
  test("names the model of a breakdown that has no price, not the answering one that has", () => {
    const meter = new SpendMeter({ main: pricing.main });
    meter.callEnded(priceUsage({ inputTokens: 750, outputTokens: 80, model: "main", models: split }, { main: pricing.main }));
    expect(meter.unpricedModel).toBe("router");
  });
});
