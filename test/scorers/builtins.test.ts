/** The built-in scorers without a model: latency against a target, schema adherence, createScorer's checks. */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { createScorer, latencyScorer, schemaAdherenceScorer } from "../../src/scorers/index.ts";
import { errorOf, rejection } from "../helpers.ts";

describe("latencyScorer", () => {
  const scorer = latencyScorer({ targetMs: 1000, maxMs: 3000 });
  const at = async (latencyMs: number) => (await scorer.score({ input: null, output: {}, latencyMs })).score;

  test("scores 1 at or below the target, 0 at or past the max, and linearly between", async () => {
    expect([await at(0), await at(1000), await at(2000), await at(2500), await at(3000), await at(9000)]).toEqual([1, 1, 0.5, 0.25, 0, 0]);
  });

  test("an attempt without a latency fails the scorer with SCORER_FAILED", async () => {
    expect((await rejection(Promise.resolve().then(() => scorer.score({ input: null, output: {} })))).code).toBe("SCORER_FAILED");
  });

  test("a max not above the target is INVALID_SCORER", () => {
    expect(errorOf(() => latencyScorer({ targetMs: 10, maxMs: 10 })).code).toBe("INVALID_SCORER");
    expect(errorOf(() => latencyScorer({ targetMs: -1, maxMs: 10 })).code).toBe("INVALID_SCORER");
  });
});

describe("schemaAdherenceScorer", () => {
  const schema = z.object({ title: z.string(), pages: z.number() });

  test("scores 1 for an output the schema accepts", async () => {
    expect(await schemaAdherenceScorer().score({ input: null, output: { title: "a", pages: 2 }, outputSchema: schema })).toMatchObject({ score: 1 });
  });

  test("scores 0 with the first issue as the reason for one it refuses", async () => {
    const result = await schemaAdherenceScorer().score({ input: null, output: { title: 3, pages: "x" }, outputSchema: schema });
    expect(result.score).toBe(0);
    expect(result.reason).toContain("title");
    expect(result.reason).not.toContain("pages");
  });

  test("a task without an output schema fails the scorer with SCORER_FAILED", async () => {
    expect((await rejection(Promise.resolve().then(() => schemaAdherenceScorer().score({ input: null, output: {} })))).code).toBe("SCORER_FAILED");
  });
});

describe("createScorer", () => {
  test("keeps its id, name, description and function", async () => {
    const s = createScorer({ id: "len", name: "Length", description: "longer is better", score: ({ output }) => ({ score: String(output).length / 10 }) });
    expect([s.id, s.name, s.description]).toEqual(["len", "Length", "longer is better"]);
    expect(await s.score({ input: null, output: "abcde" })).toEqual({ score: 0.5 });
  });

  test("without a score function it is INVALID_SCORER", () => {
    expect(errorOf(() => createScorer({ id: "x", name: "x", description: "" } as never)).code).toBe("INVALID_SCORER");
  });
});
