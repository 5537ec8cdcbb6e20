import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import {
  cacheKeyJson,
  computeCacheKey,
  deleteCache,
  getCache,
  lookupCache,
  putCache,
  putCacheIn,
  revivePayload,
  type CachePut,
} from "../../src/db/adapters/cache.ts";
import { OutputRegistry } from "../../src/db/index.ts";
import { z } from "zod";
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
    test("is the SHA-256 of table|col:type:notnull:pk|… with columns sorted by name", async () => {
      createAnalysis();
      const text = "analysis|node_id:text:1:1|run_id:text:1:1|severity:text:0:0|summary:text:1:0";
      expect(await computeSchemaSignature(db().sql, "analysis")).toBe(createHash("sha256").update(text).digest("hex"));
    });

    test("changes when a column is added", async () => {
      createAnalysis();
      const before = await computeSchemaSignature(db().sql, "analysis");
      db().sqlite.exec("ALTER TABLE analysis ADD COLUMN score INTEGER");
      expect(await computeSchemaSignature(db().sql, "analysis")).not.toBe(before);
    });

    test("throws OUTPUT_NOT_FOUND for a table that does not exist", async () => {
      let thrown: unknown;
      try {
        await computeSchemaSignature(db().sql, "missing");
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
        schemaSig: await computeSchemaSignature(db().sql, "analysis"),
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

  describe("lookupCache", () => {
    const parts = { workflowName: "wf", nodeId: "analyze", by: { repo: "a" } };

    test("keys the entry with the table's signature now and finds what putCacheIn stored under that key", async () => {
      createAnalysis();
      const miss = await lookupCache(db(), parts, "analysis");
      expect(miss.hit).toBeUndefined();
      expect(miss.schemaSig).toBe(await computeSchemaSignature(db().sql, "analysis"));
      expect(miss.cacheKey).toBe(computeCacheKey({ ...parts, schemaSig: miss.schemaSig }));
      await db().withTransaction("put", (d) => putCacheIn(d, entry({ cacheKey: miss.cacheKey, schemaSig: miss.schemaSig })));
      const found = await lookupCache(db(), { ...parts, by: { repo: "a" } }, "analysis");
      expect(found.hit?.payload).toEqual({ summary: "ok", severity: "low" });
    });

    test("after the table changed, the same parts give another key, and nothing is found", async () => {
      createAnalysis();
      const before = await lookupCache(db(), parts, "analysis");
      await putCache(db(), entry({ cacheKey: before.cacheKey, schemaSig: before.schemaSig }));
      db().sqlite.exec("ALTER TABLE analysis ADD COLUMN score INTEGER");
      const after = await lookupCache(db(), parts, "analysis");
      expect(after.cacheKey).not.toBe(before.cacheKey);
      expect(after.hit).toBeUndefined();
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

describe("cacheKeyJson", () => {
  test("sorts object keys at every depth and leaves out properties set to undefined", () => {
    expect(cacheKeyJson({ b: 1, a: { d: [true, null, "x"], c: undefined, b: -0 } })).toBe('{"a":{"b":0,"d":[true,null,"x"]},"b":1}');
    expect(cacheKeyJson({ at: new Date(0) })).toBe('{"at":"1970-01-01T00:00:00.000Z"}');
  });

  test("refuses, with CACHE_KEY_FAILED and where it is, a value JSON would silently change", () => {
    const cyclic: unknown[] = [];
    cyclic.push(cyclic);
    const cases: [unknown, string][] = [
      [undefined, "undefined at $"],
      [{ f: () => 1 }, "a function at $.f"],
      [[Symbol("s")], "a symbol at $[0]"],
      [{ n: 1n }, "a bigint at $.n"],
      [{ x: Infinity }, "Infinity at $.x"],
      [{ s: new Set([1]) }, "a Set at $.s"],
      [[undefined], "undefined at $[0]"],
      [cyclic, "a cycle at $[0]"],
    ];
    for (const [value, where] of cases) {
      let thrown: unknown;
      try {
        cacheKeyJson(value);
      } catch (error) {
        thrown = error;
      }
      expect(SmithersError.is(thrown, "CACHE_KEY_FAILED")).toBe(true);
      expect((thrown as Error).message).toContain(where);
    }
  });

  test("a value seen twice without a cycle is fine", () => {
    const shared = { a: 1 };
    expect(cacheKeyJson([shared, shared])).toBe('[{"a":1},{"a":1}]');
  });
});

describe("computeCacheKey scopes", () => {
  const parts = { workflowName: "wf", nodeId: "n", by: { b: 2, a: 1 }, schemaSig: "s1" };

  test("the key ignores the key order of by", () => {
    expect(computeCacheKey(parts)).toBe(computeCacheKey({ ...parts, by: { a: 1, b: 2 } }));
  });

  test('scope "run" adds the run id; "workflow" (the default) ignores it; "global" also ignores the workflow', () => {
    const run = (runId: string, workflowName = "wf") => computeCacheKey({ ...parts, workflowName, scope: "run", runId });
    expect(run("r1")).not.toBe(run("r2"));
    expect(run("r1")).not.toBe(run("r1", "wf2"));
    expect(computeCacheKey({ ...parts, runId: "r1" })).toBe(computeCacheKey({ ...parts, runId: "r2" }));
    expect(computeCacheKey({ ...parts, scope: "workflow" })).toBe(computeCacheKey(parts));
    const global = (workflowName: string) => computeCacheKey({ ...parts, workflowName, scope: "global" });
    expect(global("wf")).toBe(global("other"));
    expect(global("wf")).not.toBe(computeCacheKey(parts));
  });

  test("a key replaces the node id: two nodes with the same key share, the key differs from the node id's", () => {
    expect(computeCacheKey({ ...parts, nodeId: "a", key: "k" })).toBe(computeCacheKey({ ...parts, nodeId: "b", key: "k" }));
    expect(computeCacheKey({ ...parts, nodeId: "k" })).not.toBe(computeCacheKey({ ...parts, key: "k" }));
  });
});

describe("revivePayload", () => {
  test("turns the ISO text JSON made of a timestamp column's Date back into a Date, and nothing else", () => {
    const registry = new OutputRegistry({ stamp: z.object({ at: z.date(), label: z.string() }) });
    const info = registry.resolve("stamp");
    const stored = JSON.parse(JSON.stringify({ at: new Date(5), label: "2024-01-01T00:00:00.000Z" })) as unknown;
    expect(revivePayload(info, stored)).toEqual({ at: new Date(5), label: "2024-01-01T00:00:00.000Z" });
  });
});
