/**
 * `_smithers_vectors`: the RAG store. Embeddings are stored as raw little-endian float32 BLOBs
 * (4 bytes per dimension) and come back as Float32Array; metadata is JSON.
 */
import type { InferSelectModel } from "drizzle-orm";
import { and, asc, eq, inArray, ne, type SQL } from "drizzle-orm/sql";
import { SmithersError } from "../../errors/index.ts";
import { smithersVectors } from "../internal-schema.ts";
import type { SmithersDb } from "../store.ts";
import type { Sql } from "../sql.ts";
import { fromJson } from "./shared.ts";

import { putPgvectorRows, vectorSearchMethod, type VectorSearchMethod } from "./pgvector.ts";

export { searchPgvector, vectorSearchMethod, type PgVectorQuery, type VectorSearchMethod } from "./pgvector.ts";

type VectorRow = InferSelectModel<typeof smithersVectors>;

export type VectorRecord = Omit<VectorRow, "embedding" | "metadataJson"> & {
  embedding: Float32Array;
  metadata: unknown;
};

export type NewVector = {
  id: string;
  namespace: string;
  content: string;
  embedding: Float32Array;
  metadata?: unknown;
  documentId?: string | null;
  chunkIndex?: number | null;
  createdAtMs: number;
};

export function embeddingToBlob(embedding: Float32Array): Buffer {
  return Buffer.from(embedding.buffer, embedding.byteOffset, embedding.byteLength);
}

/** Copies the bytes so the Float32Array is aligned whatever the driver's buffer offset. */
export function blobToEmbedding(blob: Uint8Array): Float32Array {
  if (blob.byteLength % 4 !== 0) {
    throw new SmithersError("SCHEMA_DRIFT", `Embedding BLOB of ${blob.byteLength} bytes is not float32 data`);
  }
  // A typed-array copy is one memcpy; Uint8Array.from iterates byte by byte.
  return new Float32Array(new Uint8Array(blob).buffer);
}

function toRecord(row: VectorRow): VectorRecord {
  const { embedding, metadataJson, ...rest } = row;
  return { ...rest, embedding: blobToEmbedding(embedding), metadata: fromJson(metadataJson) };
}

/**
 * Inserts or replaces a chunk by id.
 * @example
 * await upsertVector(db, { id: "doc1#0", namespace: "docs", content, embedding: new Float32Array(vec), createdAtMs: Date.now() });
 */
export function upsertVector(db: SmithersDb, vector: NewVector): Promise<void> {
  const row = toRow(vector);
  const { id: _id, ...set } = row;
  return db.write("upsertVector", async (q) => {
    await q.orm.insert(smithersVectors).values(row).onConflictDoUpdate({ target: smithersVectors.id, set }).run();
  });
}

function toRow(vector: NewVector): VectorRow {
  return {
    id: vector.id,
    namespace: vector.namespace,
    content: vector.content,
    embedding: embeddingToBlob(vector.embedding),
    dimensions: vector.embedding.length,
    metadataJson: vector.metadata === undefined ? null : JSON.stringify(vector.metadata),
    documentId: vector.documentId ?? null,
    chunkIndex: vector.chunkIndex ?? null,
    createdAtMs: vector.createdAtMs,
  };
}

/**
 * Inserts or replaces chunks of one namespace in one transaction: all of them or none. Refuses
 * (MEMORY_DIMENSION_MISMATCH, nothing written) when the chunks' lengths differ from each other or
 * from those the namespace holds already, since cosine between vectors of two models means nothing.
 */
export async function upsertVectors(db: SmithersDb, namespace: string, vectors: readonly NewVector[]): Promise<void> {
  const rows = vectors.map((v) => toRow({ ...v, namespace }));
  const dims = new Set(rows.map((r) => r.dimensions));
  if (dims.size > 1) {
    throw new SmithersError("MEMORY_DIMENSION_MISMATCH", `Chunks of ${[...dims].join(" and ")} dimensions in one call`);
  }
  const [dimensions] = dims;
  if (dimensions === undefined) return;
  const method = await vectorSearchMethod(db);
  await db.withTransaction("upsertVectors", async (q) => {
    const other = await q.orm
      .select({ dimensions: smithersVectors.dimensions })
      .from(smithersVectors)
      .where(and(eq(smithersVectors.namespace, namespace), ne(smithersVectors.dimensions, dimensions)))
      .limit(1)
      .get();
    if (other) {
      throw new SmithersError(
        "MEMORY_DIMENSION_MISMATCH",
        `Namespace "${namespace}" holds embeddings of ${other.dimensions} dimensions; these have ${dimensions}`,
      );
    }
    await putRows(q, rows, method, vectors);
  });
}

async function putRows(q: Sql, rows: readonly VectorRow[], method?: VectorSearchMethod, vectors?: readonly NewVector[]): Promise<void> {
  if (method?.method === "pgvector" && vectors) {
    return putPgvectorRows(
      q,
      method.extensionSchema,
      rows.map((r, i) => ({ ...r, vector: vectors[i]!.embedding })),
    );
  }
  for (const row of rows) {
    const { id: _id, ...set } = row;
    await q.orm.insert(smithersVectors).values(row).onConflictDoUpdate({ target: smithersVectors.id, set }).run();
  }
}

/**
 * Inserts or replaces chunks inside the caller's transaction (a task's retained digest commits
 * with its output). The caller has checked their length against the namespace (namespaceDimensions)
 * and found the search method (vectorSearchMethod) beforehand: it cannot be probed inside a transaction.
 */
export function putVectorsIn(q: Sql, vectors: readonly NewVector[], method?: VectorSearchMethod): Promise<void> {
  return putRows(q, vectors.map(toRow), method, vectors);
}

/** The embedding length the namespace's chunks have, or undefined when it holds none. */
export function namespaceDimensions(db: SmithersDb, namespace: string): Promise<number | undefined> {
  return db.read("namespaceDimensions", async (q) => {
    const row = await q.orm
      .select({ dimensions: smithersVectors.dimensions })
      .from(smithersVectors)
      .where(eq(smithersVectors.namespace, namespace))
      .limit(1)
      .get();
    return row?.dimensions;
  });
}

/** Every chunk of a namespace, unordered (the brute-force scan recall ranks). */
export function scanVectors(db: SmithersDb, namespace: string): Promise<VectorRecord[]> {
  return db.read("scanVectors", async (q) => (await q.orm.select().from(smithersVectors).where(eq(smithersVectors.namespace, namespace)).all()).map(toRecord));
}

/** Removes these chunks of a namespace in one transaction; returns how many there were. */
export function deleteVectorIds(db: SmithersDb, namespace: string, ids: readonly string[]): Promise<number> {
  if (ids.length === 0) return Promise.resolve(0);
  return db.withTransaction("deleteVectorIds", async (q) => {
    let removed = 0;
    // Batches keep each statement under the drivers' parameter limits.
    for (let i = 0; i < ids.length; i += 500) {
      const batch = ids.slice(i, i + 500);
      const gone = await q.orm
        .delete(smithersVectors)
        .where(and(eq(smithersVectors.namespace, namespace), inArray(smithersVectors.id, batch)))
        .returning({ id: smithersVectors.id })
        .all();
      removed += gone.length;
    }
    return removed;
  });
}

export function getVector(db: SmithersDb, id: string): Promise<VectorRecord | undefined> {
  return db.read("getVector", async (q) => {
    const row = await q.orm.select().from(smithersVectors).where(eq(smithersVectors.id, id)).get();
    return row ? toRecord(row) : undefined;
  });
}

type NamespaceFilter = { namespace: string; documentId?: string };

function byNamespace(filter: NamespaceFilter): SQL | undefined {
  const conditions: SQL[] = [eq(smithersVectors.namespace, filter.namespace)];
  if (filter.documentId !== undefined) conditions.push(eq(smithersVectors.documentId, filter.documentId));
  return and(...conditions);
}

/** Chunks of a namespace (optionally one document) by document and chunk index. */
export function listVectors(db: SmithersDb, filter: NamespaceFilter): Promise<VectorRecord[]> {
  return db.read("listVectors", async (q) =>
    (
      await q.orm
        .select()
        .from(smithersVectors)
        .where(byNamespace(filter))
        .orderBy(asc(smithersVectors.documentId), asc(smithersVectors.chunkIndex), asc(smithersVectors.id))
        .all()
    ).map(toRecord),
  );
}

/** Removes the chunks of a namespace (or of one document in it); returns how many. */
export function deleteVectors(db: SmithersDb, filter: NamespaceFilter): Promise<number> {
  return db.write(
    "deleteVectors",
    async (q) => (await q.orm.delete(smithersVectors).where(byNamespace(filter)).returning({ id: smithersVectors.id }).all()).length,
  );
}

function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

/**
 * The `topK` chunks of a namespace most similar (cosine) to `query`, best first. A linear scan:
 * fine for the thousands of chunks a workflow keeps, not a vector index.
 */
export async function searchVectors(
  db: SmithersDb,
  query: { namespace: string; embedding: Float32Array; topK?: number },
): Promise<(VectorRecord & { score: number })[]> {
  const rows = await db.read("searchVectors", (q) =>
    q.orm
      .select()
      .from(smithersVectors)
      .where(and(eq(smithersVectors.namespace, query.namespace), eq(smithersVectors.dimensions, query.embedding.length)))
      .all(),
  );
  return rows
    .map((row) => {
      const record = toRecord(row);
      return { ...record, score: cosine(query.embedding, record.embedding) };
    })
    .sort((a, b) => b.score - a.score)
    .slice(0, query.topK ?? 5);
}
