/**
 * Memory over `_smithers_vectors`, on whichever backend the suite runs (the pg pass runs this
 * folder): the rows remember writes, recall's order against cosines worked out by hand, metadata
 * filters, workflow/run/namespace scopes, forget, and the failure codes with nothing half-written.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { createMemory, openSmithersDb, type SmithersDb } from "../../src/index.ts";
import { query, refuseInserts, rejection, tablesReady, tempDbPath } from "../helpers.ts";
import { hashEmbeddingModel } from "../support/hash-embedder.ts";

/** An embedding model answering the vectors of this table (its texts are their own names). */
function tableModel(table: Record<string, number[]>) {
  return {
    specificationVersion: "v3" as const,
    provider: "test-table",
    modelId: "table",
    maxEmbeddingsPerCall: undefined,
    supportsParallelCalls: false,
    async doEmbed({ values }: { values: string[] }) {
      return { embeddings: values.map((v) => table[v] ?? [0, 0, 1]), warnings: [] };
    },
  };
}

/** Query [1,0,0]. Cosines by hand: a 1; b (1,1,0) 1/√2 ≈ 0.7071; e (2,1,2) 2/3 ≈ 0.6667; c (0,1,0) 0; d (-1,0,0) -1. */
const VECTORS: Record<string, number[]> = {
  q: [1, 0, 0],
  a: [1, 0, 0],
  b: [1, 1, 0],
  c: [0, 1, 0],
  d: [-1, 0, 0],
  e: [2, 1, 2],
};

const opened: SmithersDb[] = [];
afterAll(() => Promise.all(opened.map((db) => db.close())));

async function fresh(): Promise<{ db: SmithersDb; path: string }> {
  const path = tempDbPath();
  const db = openSmithersDb(path);
  opened.push(db);
  await tablesReady(db);
  return { db, path };
}

type Row = {
  id: string;
  namespace: string;
  content: string;
  dimensions: number;
  metadata_json: string;
  document_id: string | null;
  chunk_index: number | null;
  embedding: Uint8Array;
};

const rows = (path: string) => query<Row>(path, "SELECT * FROM _smithers_vectors ORDER BY content");
const floats = (bytes: Uint8Array) => Array.from(new Float32Array(Uint8Array.from(bytes).buffer));

describe("remember", () => {
  test("writes one row per chunk: float32 embedding bytes, dimensions, metadata, scope, document", async () => {
    const { db, path } = await fresh();
    const memory = createMemory({ db, embedder: tableModel(VECTORS), namespace: "kb", workflow: "wf", runId: "r1" });
    const ids = await memory.remember(["b", { content: "e", id: "chunk-e", metadata: { lang: "en" } }], { metadata: { source: "faq" }, documentId: "doc1" });
    expect(ids[1]).toBe("chunk-e");
    const stored = await rows(path);
    expect(stored.map((r) => [r.id, r.namespace, r.content, Number(r.dimensions), r.document_id, Number(r.chunk_index)])).toEqual([
      [ids[0]!, "kb", "b", 3, "doc1", 0],
      ["chunk-e", "kb", "e", 3, "doc1", 1],
    ]);
    expect(floats(stored[1]!.embedding)).toEqual([2, 1, 2]);
    expect(stored[1]!.embedding.byteLength).toBe(12);
    expect(JSON.parse(stored[1]!.metadata_json)).toEqual({ metadata: { source: "faq", lang: "en" }, workflow: "wf", runId: "r1" });
  });

  test("remembering an id again replaces its chunk", async () => {
    const { db, path } = await fresh();
    const memory = createMemory({ db, embedder: tableModel(VECTORS) });
    await memory.remember([{ content: "a", id: "x" }]);
    await memory.remember([{ content: "d", id: "x", metadata: { v: 2 } }]);
    const stored = await rows(path);
    expect(stored.map((r) => [r.id, r.content, floats(r.embedding)])).toEqual([["x", "d", [-1, 0, 0]]]);
  });
});

describe("recall", () => {
  test("ranks by cosine similarity, best first, as computed by hand", async () => {
    const { db } = await fresh();
    const memory = createMemory({ db, embedder: tableModel(VECTORS) });
    await memory.remember(["c", "e", "d", "a", "b"]);
    const hits = await memory.recall("q", { k: 5 });
    expect(hits.map((h) => h.content)).toEqual(["a", "b", "e", "c", "d"]);
    const expected = [1, Math.SQRT1_2, 2 / 3, 0, -1];
    hits.forEach((h, i) => expect(h.score).toBeCloseTo(expected[i]!, 6));
    expect((await memory.recall("q", { k: 2 })).map((h) => h.content)).toEqual(["a", "b"]);
    expect((await memory.recall("q", { minScore: 0.5 })).map((h) => h.content)).toEqual(["a", "b", "e"]);
  });

  test("a deterministic 384-dim embedder recalls the chunk sharing the query's words", async () => {
    const { db } = await fresh();
    const embedder = hashEmbeddingModel(384);
    const memory = createMemory({ db, embedder, dimensions: 384 });
    await memory.remember(["refunds are paid within five days", "the office cat is called Miso", "invoices are sent monthly"]);
    const [best] = await memory.recall("when are refunds paid", { k: 1 });
    expect(best?.content).toBe("refunds are paid within five days");
    expect(embedder.calls).toEqual([
      ["refunds are paid within five days", "the office cat is called Miso", "invoices are sent monthly"],
      ["when are refunds paid"],
    ]);
  });

  test("metadata filters: equal to a value, or one of an array's", async () => {
    const { db } = await fresh();
    const memory = createMemory({ db, embedder: tableModel(VECTORS) });
    await memory.remember([
      { content: "a", metadata: { src: "faq", lang: "en" } },
      { content: "b", metadata: { src: "wiki", lang: "en" } },
      { content: "e", metadata: { src: "faq", lang: "fr" } },
      "c",
    ]);
    expect((await memory.recall("q", { filter: { src: "faq" } })).map((h) => h.content)).toEqual(["a", "e"]);
    expect((await memory.recall("q", { filter: { src: "faq", lang: "fr" } })).map((h) => h.content)).toEqual(["e"]);
    expect((await memory.recall("q", { filter: { src: ["wiki", "faq"], lang: "en" } })).map((h) => h.content)).toEqual(["a", "b"]);
    expect((await memory.recall("q", { filter: { src: "none" } })).map((h) => h.content)).toEqual([]);
    const bad = await rejection(memory.recall("q", { filter: { src: { $gt: 1 } } as never }));
    expect(bad.code).toBe("INVALID_OPTION");
  });

  test("scopes: a run's chunks, a workflow's, the namespace's; never another namespace's", async () => {
    const { db } = await fresh();
    const embedder = tableModel(VECTORS);
    const run1 = createMemory({ db, embedder, namespace: "team", workflow: "triage", runId: "r1" });
    const run2 = createMemory({ db, embedder, namespace: "team", workflow: "triage", runId: "r2" });
    const other = createMemory({ db, embedder, namespace: "team", workflow: "billing", runId: "r3" });
    const elsewhere = createMemory({ db, embedder, namespace: "private", workflow: "triage", runId: "r1" });
    await run1.remember(["a"]);
    await run2.remember(["b"]);
    await other.remember(["e"]);
    await elsewhere.remember(["c"]);
    expect((await run1.recall("q", { scope: "run" })).map((h) => [h.content, h.runId])).toEqual([["a", "r1"]]);
    expect((await run1.recall("q", { scope: "workflow" })).map((h) => h.content)).toEqual(["a", "b"]);
    expect((await run1.recall("q", { scope: "namespace" })).map((h) => h.content)).toEqual(["a", "b", "e"]);
    expect((await run1.recall("q")).map((h) => h.content)).toEqual(["a", "b", "e"]);
    expect((await elsewhere.recall("q")).map((h) => h.content)).toEqual(["c"]);
    const unscoped = createMemory({ db, embedder, namespace: "team" });
    expect((await rejection(unscoped.recall("q", { scope: "run" }))).code).toBe("INVALID_OPTION");
    expect((await rejection(unscoped.recall("q", { scope: "tenant" as never }))).code).toBe("INVALID_OPTION");
  });
});

describe("forget", () => {
  test("removes the chunks matching ids, document, filter and scope; returns how many", async () => {
    const { db, path } = await fresh();
    const embedder = tableModel(VECTORS);
    const run1 = createMemory({ db, embedder, namespace: "n", workflow: "w", runId: "r1" });
    const run2 = createMemory({ db, embedder, namespace: "n", workflow: "w", runId: "r2" });
    await run1.remember(
      [
        { content: "a", id: "a", metadata: { tag: "x" } },
        { content: "b", id: "b", metadata: { tag: "y" } },
      ],
      { documentId: "d1" },
    );
    await run2.remember([
      { content: "c", id: "c", metadata: { tag: "x" } },
      { content: "d", id: "d" },
    ]);
    expect(await run1.forget({ ids: ["a", "c"], scope: "run" })).toBe(1);
    expect((await rows(path)).map((r) => r.id)).toEqual(["b", "c", "d"]);
    expect(await run1.forget({ filter: { tag: "x" } })).toBe(1);
    expect((await rows(path)).map((r) => r.id)).toEqual(["b", "d"]);
    expect(await run2.forget({ documentId: "d1" })).toBe(1);
    expect(await run2.forget({ scope: "run" })).toBe(1);
    expect(await rows(path)).toEqual([]);
  });
});

describe("failures leave nothing half-written", () => {
  test("an embedding model that throws fails remember and recall with MEMORY_EMBED_FAILED", async () => {
    const { db, path } = await fresh();
    const broken = { ...tableModel(VECTORS), doEmbed: async () => Promise.reject(new Error("model exploded")) };
    const memory = createMemory({ db, embedder: broken, maxRetries: 0 });
    const error = await rejection(memory.remember(["a", "b"]));
    expect([error.code, error.message]).toEqual(["MEMORY_EMBED_FAILED", expect.stringContaining("model exploded")]);
    expect((await rejection(memory.recall("q"))).code).toBe("MEMORY_EMBED_FAILED");
    expect(await rows(path)).toEqual([]);
  });

  test("too few embeddings, or non-numbers, is MEMORY_EMBED_FAILED", async () => {
    const { db, path } = await fresh();
    const short = { ...tableModel(VECTORS), doEmbed: async () => ({ embeddings: [[1, 0, 0]], warnings: [] }) };
    expect((await rejection(createMemory({ db, embedder: short }).remember(["a", "b"]))).code).toBe("MEMORY_EMBED_FAILED");
    const nan = { ...tableModel(VECTORS), doEmbed: async () => ({ embeddings: [[1, Number.NaN, 0]], warnings: [] }) };
    expect((await rejection(createMemory({ db, embedder: nan }).remember(["a"]))).code).toBe("MEMORY_EMBED_FAILED");
    expect(await rows(path)).toEqual([]);
  });

  test("dimension mismatches: against `dimensions`, within a batch, against the namespace's chunks", async () => {
    const { db, path } = await fresh();
    const declared = createMemory({ db, embedder: tableModel(VECTORS), dimensions: 4 });
    expect((await rejection(declared.remember(["a"]))).code).toBe("MEMORY_DIMENSION_MISMATCH");
    const mixed = createMemory({ db, embedder: tableModel({ ...VECTORS, long: [1, 0, 0, 0] }) });
    expect((await rejection(mixed.remember(["a", "long"]))).code).toBe("MEMORY_DIMENSION_MISMATCH");
    expect(await rows(path)).toEqual([]);

    await createMemory({ db, embedder: tableModel(VECTORS) }).remember(["a"]);
    const wider = createMemory({ db, embedder: hashEmbeddingModel(8) });
    expect((await rejection(wider.remember(["another model"]))).code).toBe("MEMORY_DIMENSION_MISMATCH");
    expect((await rejection(wider.recall("another model"))).code).toBe("MEMORY_DIMENSION_MISMATCH");
    expect((await rows(path)).map((r) => r.content)).toEqual(["a"]);
    // Another namespace is another model's to fill.
    await createMemory({ db, embedder: hashEmbeddingModel(8), namespace: "wide" }).remember(["another model"]);
    expect((await rows(path)).length).toBe(2);
  });

  test("a batch whose one row the database refuses writes none of them", async () => {
    const { db, path } = await fresh();
    const memory = createMemory({ db, embedder: tableModel(VECTORS) });
    const lift = await refuseInserts(path, "_smithers_vectors", "NEW.content = 'e'");
    const error = await rejection(memory.remember(["a", "e", "b"]));
    expect(`${error.message} ${(error.cause as Error | undefined)?.message}`).toContain("refused");
    expect(await rows(path)).toEqual([]);
    await lift();
    await memory.remember(["a", "e", "b"]);
    expect((await rows(path)).map((r) => r.content)).toEqual(["a", "b", "e"]);
  });

  test("bad options are INVALID_OPTION", async () => {
    const { db } = await fresh();
    const embedder = tableModel(VECTORS);
    expect(() => createMemory({ db, embedder, namespace: "" })).toThrow(expect.objectContaining({ code: "INVALID_OPTION" }));
    expect(() => createMemory({ db, embedder, dimensions: 0 })).toThrow(expect.objectContaining({ code: "INVALID_OPTION" }));
    const memory = createMemory({ db, embedder });
    expect((await rejection(memory.recall("q", { k: 0 }))).code).toBe("INVALID_OPTION");
    expect((await rejection(memory.remember([""]))).code).toBe("INVALID_OPTION");
  });
});
