import { describe, expect, test } from "bun:test";
import {
  blobToEmbedding,
  deleteVectors,
  embeddingToBlob,
  getVector,
  listVectors,
  searchVectors,
  upsertVector,
  type NewVector,
} from "../../src/db/adapters/vectors.ts";
import { smithersVectors } from "../../src/db/index.ts";
import { forEachBackend } from "./backends.ts";

const vector = (id: string, values: number[], overrides: Partial<NewVector> = {}): NewVector => ({
  id,
  namespace: "docs",
  content: `chunk ${id}`,
  embedding: new Float32Array(values),
  createdAtMs: 1,
  ...overrides,
});

forEachBackend((db) => {
  describe("upsertVector", () => {
    test("stores the embedding as a float32 BLOB and reads it back exactly", async () => {
      const values = [0.1, -2.5, 3.25, 1e-7];
      await upsertVector(db(), vector("v1", values, { metadata: { page: 2 }, documentId: "doc", chunkIndex: 0 }));
      const raw = db().db.select().from(smithersVectors).get();
      expect([raw?.embedding.byteLength, raw?.dimensions, raw?.metadataJson]).toEqual([16, 4, '{"page":2}']);
      const record = await getVector(db(), "v1");
      expect(record?.embedding).toEqual(new Float32Array(values));
      expect([record?.metadata, record?.documentId, record?.chunkIndex, record?.content]).toEqual([{ page: 2 }, "doc", 0, "chunk v1"]);
    });

    test("replaces a chunk with the same id", async () => {
      await upsertVector(db(), vector("v1", [1, 2]));
      await upsertVector(db(), vector("v1", [3, 4, 5], { content: "new" }));
      const record = await getVector(db(), "v1");
      expect([Array.from(record?.embedding ?? []), record?.dimensions, record?.content]).toEqual([[3, 4, 5], 3, "new"]);
    });
  });

  describe("listVectors", () => {
    test("lists a namespace, optionally one document, by document and chunk index", async () => {
      await upsertVector(db(), vector("b1", [1], { documentId: "b", chunkIndex: 1 }));
      await upsertVector(db(), vector("a1", [1], { documentId: "a", chunkIndex: 1 }));
      await upsertVector(db(), vector("a0", [1], { documentId: "a", chunkIndex: 0 }));
      await upsertVector(db(), vector("x", [1], { namespace: "other" }));
      expect((await listVectors(db(), { namespace: "docs" })).map((v) => v.id)).toEqual(["a0", "a1", "b1"]);
      expect((await listVectors(db(), { namespace: "docs", documentId: "b" })).map((v) => v.id)).toEqual(["b1"]);
    });
  });

  describe("deleteVectors", () => {
    test("removes one document's chunks or a whole namespace", async () => {
      await upsertVector(db(), vector("a0", [1], { documentId: "a" }));
      await upsertVector(db(), vector("b0", [1], { documentId: "b" }));
      await upsertVector(db(), vector("b1", [1], { documentId: "b" }));
      expect(await deleteVectors(db(), { namespace: "docs", documentId: "b" })).toBe(2);
      expect(await deleteVectors(db(), { namespace: "docs" })).toBe(1);
      expect(await listVectors(db(), { namespace: "docs" })).toEqual([]);
    });
  });

  describe("searchVectors", () => {
    test("returns the topK most cosine-similar chunks of the namespace, best first", async () => {
      await upsertVector(db(), vector("east", [1, 0]));
      await upsertVector(db(), vector("north", [0, 1]));
      await upsertVector(db(), vector("northeast", [1, 1]));
      await upsertVector(db(), vector("elsewhere", [1, 0], { namespace: "other" }));
      await upsertVector(db(), vector("3d", [1, 0, 0]));
      const hits = await searchVectors(db(), { namespace: "docs", embedding: new Float32Array([1, 0.1]), topK: 2 });
      expect(hits.map((h) => h.id)).toEqual(["east", "northeast"]);
      expect(hits[0]?.score).toBeCloseTo(0.995, 3);
    });
  });
});

describe("blobToEmbedding", () => {
  test("round-trips embeddingToBlob even from an unaligned view", () => {
    const values = new Float32Array([1.5, -0.25, 42]);
    const blob = embeddingToBlob(values);
    const shifted = new Uint8Array(blob.byteLength + 1);
    shifted.set(blob, 1);
    expect(blobToEmbedding(shifted.subarray(1))).toEqual(values);
  });

  test("rejects a BLOB whose length is not a multiple of 4", () => {
    expect(() => blobToEmbedding(new Uint8Array(5))).toThrow("not float32 data");
  });
});
