import { describe, expect, test } from "bun:test";
import { insertScore, listScores, type NewScoreRow } from "../../src/db/adapters/scorers.ts";
import { forEachBackend } from "./backends.ts";

const score = (id: string, overrides: Partial<NewScoreRow> = {}): NewScoreRow => ({
  id,
  runId: "r1",
  nodeId: "write",
  scorerId: "len",
  scorerName: "Length",
  score: 0.5,
  scoredAtMs: 100,
  ...overrides,
});

forEachBackend((db) => {
  describe("insertScore", () => {
    test("stores a scorer result with defaults for iteration, attempt, source and status", async () => {
      await insertScore(db(), score("s1", { reason: "short", latencyMs: 12, metaJson: '{"words":3}' }));
      expect(await listScores(db(), { runId: "r1" })).toEqual([
        {
          id: "s1",
          runId: "r1",
          nodeId: "write",
          iteration: 0,
          attempt: 1,
          scorerId: "len",
          scorerName: "Length",
          source: "live",
          status: "scored",
          score: 0.5,
          reason: "short",
          metaJson: '{"words":3}',
          error: null,
          latencyMs: 12,
          durationMs: null,
          scoredAtMs: 100,
        },
      ]);
    });

    test("recording the same id twice keeps one row", async () => {
      await insertScore(db(), score("s1"));
      await insertScore(db(), score("s1", { score: 0.9 }));
      expect((await listScores(db(), { runId: "r1" })).map((s) => s.score)).toEqual([0.5]);
    });
  });

  describe("listScores", () => {
    test("filters by node, iteration, attempt and scorer, oldest first", async () => {
      await insertScore(db(), score("a", { scoredAtMs: 3 }));
      await insertScore(db(), score("b", { scoredAtMs: 1, nodeId: "other" }));
      await insertScore(db(), score("c", { scoredAtMs: 2, iteration: 1 }));
      await insertScore(db(), score("d", { scoredAtMs: 4, attempt: 2, scorerId: "tone" }));
      await insertScore(db(), score("e", { runId: "r2" }));
      const ids = (rows: { id: string }[]) => rows.map((r) => r.id);
      expect(ids(await listScores(db(), { runId: "r1" }))).toEqual(["b", "c", "a", "d"]);
      expect(ids(await listScores(db(), { runId: "r1", nodeId: "write" }))).toEqual(["c", "a", "d"]);
      expect(ids(await listScores(db(), { runId: "r1", iteration: 1 }))).toEqual(["c"]);
      expect(ids(await listScores(db(), { runId: "r1", attempt: 2 }))).toEqual(["d"]);
      expect(ids(await listScores(db(), { runId: "r1", scorerId: "len" }))).toEqual(["b", "c", "a"]);
    });
  });
});
