import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { computeCacheKey, deleteCache, getCache, putCache, type CachePut } from "../../src/db/adapters/cache.ts";
import { computeSchemaSignature, schemaSignatureText } from "../../src/db/index.ts";
import { SmithersError } from "../../src/errors/index.ts";
import { forEachBackend } from "./backends.ts";

const entry = (overrides: Partial<CachePut> = {}): CachePut => ({
  cacheKey: "k1",
  workflowName: "wf",
  nodeId: "analyze",
  outputTable: "analysis",
  payload: { summary: "ok", severity: "low" },
  createdAtMs: 10,
  ...overrides,
});

forEachBackend((db) => {
  const createAnalysis = () =>
    db().sqlite.exec(
      "CREATE TABLE analysis (run_id TEXT NOT NULL, node_id TEXT NOT NULL, summary TEXT NOT NULL, severity TEXT, PRIMARY KEY (run_id, node_id))",
    );

  describe("computeSchemaSignature", () => {
    test("is the SHA-256 of table|col:type:notnull:pk|… with columns sorted by name", () => {
      createAnalysis();
      const text = "analysis|node_id:text:1:1|run_id:text:1:1|severity:text:0:0|summary:text:1:0";
      expect(computeSchemaSignature(db().sqlite, "analysis")).toBe(createHash("sha256").update(text).digest("hex"));
    });

    test("changes when a column is added", () => {
      createAnalysis();
      const before = computeSchemaSignature(db().sqlite, "analysis");
      db().sqlite.exec("ALTER TABLE analysis ADD COLUMN score INTEGER");
      expect(computeSchemaSignature(db().sqlite, "analysis")).not.toBe(before);
    });

    test("throws OUTPUT_NOT_FOUND for a table that does not exist", () => {
      let thrown: unknown;
      try {
        computeSchemaSignature(db().sqlite, "missing");
      } catch (error) {
        thrown = error;
      }
      expect(SmithersError.is(thrown, "OUTPUT_NOT_FOUND")).toBe(true);
    });
  });

  describe("putCache", () => {
    test("stores the payload with the live table's schema signature", async () => {
      createAnalysis();
      await putCache(db(), entry({ agentSig: "claude@1" }));
      const hit = await getCache(db(), "k1");
      expect(hit?.payload).toEqual({ summary: "ok", severity: "low" });
      expect(hit?.row).toEqual({
        cacheKey: "k1",
        createdAtMs: 10,
        workflowName: "wf",
        nodeId: "analyze",
        outputTable: "analysis",
        schemaSig: computeSchemaSignature(db().sqlite, "analysis"),
        agentSig: "claude@1",
        payloadJson: '{"summary":"ok","severity":"low"}',
      });
    });

    test("putting the same key again replaces the entry", async () => {
      createAnalysis();
      await putCache(db(), entry());
      await putCache(db(), entry({ payload: { summary: "new" }, createdAtMs: 20 }));
      const hit = await getCache(db(), "k1");
      expect([hit?.payload, hit?.row.createdAtMs]).toEqual([{ summary: "new" }, 20]);
    });
  });

  describe("getCache", () => {
    test("is a miss for an unknown key", async () => {
      expect(await getCache(db(), "nope")).toBeUndefined();
    });

    test("is a miss once the output table's schema has changed", async () => {
      createAnalysis();
      await putCache(db(), entry());
      db().sqlite.exec("ALTER TABLE analysis ADD COLUMN score INTEGER");
      expect(await getCache(db(), "k1")).toBeUndefined();
    });

    test("is a miss when the stored signature differs from the current one", async () => {
      createAnalysis();
      await putCache(db(), entry({ schemaSig: "stale" }));
      expect(await getCache(db(), "k1")).toBeUndefined();
    });

    test("is a miss when the output table was dropped", async () => {
      createAnalysis();
      await putCache(db(), entry());
      db().sqlite.exec("DROP TABLE analysis");
      expect(await getCache(db(), "k1")).toBeUndefined();
    });
  });

  describe("deleteCache", () => {
    test("drops a node's entries, or a whole workflow's, and returns how many", async () => {
      createAnalysis();
      await putCache(db(), entry({ cacheKey: "a" }));
      await putCache(db(), entry({ cacheKey: "b", nodeId: "other" }));
      await putCache(db(), entry({ cacheKey: "c", workflowName: "wf2" }));
      expect(await deleteCache(db(), { workflowName: "wf", nodeId: "analyze" })).toBe(1);
      expect(await getCache(db(), "b")).toBeDefined();
      expect(await deleteCache(db(), { workflowName: "wf" })).toBe(1);
      expect(await getCache(db(), "c")).toBeDefined();
    });
  });
});

describe("schemaSignatureText", () => {
  test("sorts columns by name and writes flags as 0/1 with lower-case types", () => {
    const text = schemaSignatureText("t", [
      { name: "b", type: "INTEGER", notNull: false, primaryKey: false },
      { name: "a", type: "TEXT", notNull: true, primaryKey: true },
    ]);
    expect(text).toBe("t|a:text:1:1|b:integer:0:0");
  });
});

describe("computeCacheKey", () => {
  const parts = { workflowName: "wf", nodeId: "n", by: { file: "a.ts" }, version: 1, schemaSig: "s1" };

  test("is stable for equal parts", () => {
    expect(computeCacheKey(parts)).toBe(computeCacheKey({ ...parts, by: { file: "a.ts" } }));
    expect(computeCacheKey(parts)).toMatch(/^[0-9a-f]{64}$/);
  });

  test("changes with each of workflow, node, cache.by, version, schema and agent signature", () => {
    const base = computeCacheKey(parts);
    const variants = [
      { ...parts, workflowName: "wf2" },
      { ...parts, nodeId: "m" },
      { ...parts, by: { file: "b.ts" } },
      { ...parts, version: 2 },
      { ...parts, schemaSig: "s2" },
      { ...parts, agentSig: "claude" },
    ];
    const keys = variants.map(computeCacheKey);
    expect(new Set([base, ...keys]).size).toBe(variants.length + 1);
  });
});
