/**
 * pgvector for `_smithers_vectors` on PostgreSQL. When the `vector` extension is installed (or
 * `CREATE EXTENSION IF NOT EXISTS vector` succeeds), the table gains a column `embedding_v` of
 * pgvector's type beside the float32 BYTEA, and recall ranks in SQL by cosine distance (`<=>`)
 * with the metadata filters and scope in the WHERE clause. Without it, recall stays the
 * brute-force scan in JS (memory.ts), and `vectorSearchMethod` says why.
 *
 * The BYTEA stays the truth. Writes through Smithers set `embedding_v` with it once the method
 * is known (putPgvectorRows); a trigger clears it when another writer changes a row's embedding,
 * and a search first fills it for the namespace's rows that lack it (an index finds them). No index: an HNSW or IVFFlat index is approximate and would make pgvector's
 * top-k differ from SQLite's on the same data; a filtered exact scan is what bench/vectors measures.
 */
import { SmithersError } from "../../errors/index.ts";
import type { Sql } from "../sql.ts";
import type { SmithersDb } from "../store.ts";

export type VectorSearchMethod = { method: "pgvector"; extensionSchema: string } | { method: "scan"; reason: string };

const probed = new WeakMap<SmithersDb, Promise<VectorSearchMethod>>();
/** Column values are written as pgvector's text form in batches of this many rows. */
const FILL_BATCH = 2000;

const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;

/**
 * How this database's recall ranks: pgvector, or the scan (SQLite; PostgreSQL without the
 * extension, with the reason). Found once per database handle; the first call on PostgreSQL may
 * create the extension, the column and the trigger.
 */
export function vectorSearchMethod(db: SmithersDb): Promise<VectorSearchMethod> {
  if (db.dialect !== "postgres") return Promise.resolve({ method: "scan", reason: "SQLite has no vector extension: recall scans the namespace" });
  let found = probed.get(db);
  if (!found) {
    found = probe(db).catch((cause: unknown): VectorSearchMethod => {
      const reason = `pgvector is not available (${cause instanceof Error ? cause.message : String(cause)}): recall scans the namespace`;
      console.warn(`smithers: ${reason}`);
      return { method: "scan", reason };
    });
    probed.set(db, found);
  }
  return found;
}

async function probe(db: SmithersDb): Promise<VectorSearchMethod> {
  // Outside a transaction of other work: a failing CREATE EXTENSION aborts only its own.
  const installed = () =>
    db.read("pgvectorSchema", (q) => q.get<{ schema: string }>("SELECT extnamespace::regnamespace::text AS schema FROM pg_extension WHERE extname = 'vector'"));
  let ext = await installed();
  if (!ext) {
    await db
      .write("pgvectorCreate", (q) => q.exec("CREATE EXTENSION IF NOT EXISTS vector"))
      .catch(async (error: unknown) => {
        if (!(await installed())) throw error; // another process may have created it meanwhile
      });
    ext = await installed();
    if (!ext) throw new Error("CREATE EXTENSION vector left no extension");
  }
  const schema = ext.schema.replace(/^"|"$/g, "");
  await db.write("pgvectorColumn", async (q) => {
    const ready = await q.get(
      `SELECT 1 FROM pg_attribute a JOIN pg_trigger t ON t.tgrelid = a.attrelid AND t.tgname = '_smithers_vectors_stale'
       WHERE a.attrelid = to_regclass(quote_ident(current_schema()) || '._smithers_vectors') AND a.attname = 'embedding_v' AND NOT a.attisdropped
         AND to_regclass(quote_ident(current_schema()) || '._smithers_vectors_unfilled_idx') IS NOT NULL`,
    );
    if (ready) return;
    await q.exec(`ALTER TABLE _smithers_vectors ADD COLUMN IF NOT EXISTS embedding_v ${quoteIdent(schema)}.vector`);
    // The ranking reads embedding_v of every row: kept in the row (MAIN), with the BYTEA (read only
    // by the scan path) the first moved out to TOAST. Out of line, each row's vector is one more
    // TOAST lookup, which is most of a search's time.
    await q.exec("ALTER TABLE _smithers_vectors ALTER COLUMN embedding_v SET STORAGE MAIN, ALTER COLUMN embedding SET STORAGE EXTERNAL");
    // A writer that set no embedding_v with a new embedding (one that knows nothing of pgvector) leaves the column to be filled again.
    // Compared as text: the extension's `=` may live in a schema outside the writer's search path.
    await q.exec(`CREATE OR REPLACE FUNCTION _smithers_vectors_stale() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF NEW.embedding IS DISTINCT FROM OLD.embedding AND NEW.embedding_v::text IS NOT DISTINCT FROM OLD.embedding_v::text THEN NEW.embedding_v := NULL; END IF;
  RETURN NEW;
END $fn$`);
    await q.exec(
      "CREATE OR REPLACE TRIGGER _smithers_vectors_stale BEFORE UPDATE ON _smithers_vectors FOR EACH ROW EXECUTE FUNCTION _smithers_vectors_stale()",
    );
    // Finding the rows to fill is an index lookup, not a scan of the namespace.
    await q.exec("CREATE INDEX IF NOT EXISTS _smithers_vectors_unfilled_idx ON _smithers_vectors (namespace) WHERE embedding_v IS NULL");
  });
  return { method: "pgvector", extensionSchema: schema };
}

export type PgVectorRowIn = {
  id: string;
  namespace: string;
  content: string;
  embedding: Buffer;
  dimensions: number;
  metadataJson: string | null;
  documentId: string | null;
  chunkIndex: number | null;
  createdAtMs: number;
};

/**
 * Inserts or replaces rows with their pgvector column set (so no recall has to fill it), inside
 * the caller's transaction. `embedding` is the float32 BYTEA, `vector` the same values.
 */
export async function putPgvectorRows(q: Sql, schema: string, rows: readonly (PgVectorRowIn & { vector: Float32Array })[]): Promise<void> {
  const text = `INSERT INTO _smithers_vectors (id, namespace, content, embedding, dimensions, metadata_json, document_id, chunk_index, created_at_ms, embedding_v)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?::${quoteIdent(schema)}.vector)
    ON CONFLICT (id) DO UPDATE SET namespace = excluded.namespace, content = excluded.content, embedding = excluded.embedding,
      dimensions = excluded.dimensions, metadata_json = excluded.metadata_json, document_id = excluded.document_id,
      chunk_index = excluded.chunk_index, created_at_ms = excluded.created_at_ms, embedding_v = excluded.embedding_v`;
  for (const r of rows) {
    await q.run(text, r.id, r.namespace, r.content, r.embedding, r.dimensions, r.metadataJson, r.documentId, r.chunkIndex, r.createdAtMs, vectorText(r.vector));
  }
}

/** pgvector's text form of an embedding: `[x,y,…]` (float32 values print exactly as float4). */
function vectorText(embedding: Float32Array): string {
  return `[${Array.from(embedding).join(",")}]`;
}

/** Fills `embedding_v` for the namespace's rows without it (new, or whose embedding changed). */
async function fillMissing(db: SmithersDb, schema: string, namespace: string, decode: (blob: Uint8Array) => Float32Array): Promise<void> {
  for (;;) {
    const done = await db.write("pgvectorFill", async (q) => {
      const rows = await q.all<{ id: string; embedding: Uint8Array }>(
        "SELECT id, embedding FROM _smithers_vectors WHERE namespace = ? AND embedding_v IS NULL LIMIT ?",
        namespace,
        FILL_BATCH,
      );
      if (rows.length === 0) return true;
      await q.run(
        `UPDATE _smithers_vectors AS v SET embedding_v = u.e::${quoteIdent(schema)}.vector FROM unnest(?::text[], ?::text[]) AS u(id, e) WHERE v.id = u.id`,
        rows.map((r) => r.id),
        rows.map((r) => vectorText(decode(r.embedding))),
      );
      return rows.length < FILL_BATCH;
    });
    if (done) return;
  }
}

type Scalar = string | number | boolean | null;

export type PgVectorQuery = {
  namespace: string;
  embedding: Float32Array;
  k: number;
  /** Each key: the chunk's metadata value equals this (or one of this array's). */
  filter?: Record<string, Scalar | readonly Scalar[]>;
  /** Only chunks remembered under this workflow / run (metadata_json's top-level fields). */
  workflow?: string;
  runId?: string;
  minScore?: number;
};

export type PgVectorRow = {
  id: string;
  content: string;
  metadata_json: string | null;
  document_id: string | null;
  chunk_index: number | null;
  created_at_ms: number;
  score: number;
};

/** The WHERE conditions (with their parameters) of a filter on the stored metadata. */
function filterSql(filter: PgVectorQuery["filter"]): { text: string; params: unknown[] } {
  const parts: string[] = [];
  const params: unknown[] = [];
  for (const [key, want] of Object.entries(filter ?? {})) {
    const values = Array.isArray(want) ? want : [want];
    if (values.length === 0) {
      parts.push("FALSE");
      continue;
    }
    parts.push(`((metadata_json::jsonb -> 'metadata') -> ?::text) IN (${values.map(() => "?::jsonb").join(", ")})`);
    params.push(key, ...values.map((v) => JSON.stringify(v)));
  }
  return { text: parts.map((p) => ` AND ${p}`).join(""), params };
}

/**
 * The `k` chunks of a namespace closest to the query by cosine distance, best first, each with its
 * cosine similarity (1 - distance). MEMORY_DIMENSION_MISMATCH when the namespace holds embeddings
 * of another length.
 */
export async function searchPgvector(db: SmithersDb, schema: string, query: PgVectorQuery, decode: (blob: Uint8Array) => Float32Array): Promise<PgVectorRow[]> {
  // Writes keep a namespace to one length (upsertVectors), so one row tells it.
  const other = await db.read("pgvectorDims", (q: Sql) =>
    q.get<{ dimensions: number }>("SELECT dimensions FROM _smithers_vectors WHERE namespace = ? LIMIT 1", query.namespace),
  );
  if (other && Number(other.dimensions) !== query.embedding.length) {
    throw new SmithersError(
      "MEMORY_DIMENSION_MISMATCH",
      `Namespace "${query.namespace}" holds embeddings of ${other.dimensions} dimensions; the query has ${query.embedding.length}`,
    );
  }
  await fillMissing(db, schema, query.namespace, decode);
  const vector = `${quoteIdent(schema)}.vector`;
  const distance = `(embedding_v OPERATOR(${quoteIdent(schema)}.<=>) ?::${vector})`;
  const filter = filterSql(query.filter);
  const scope: string[] = [];
  const scopeParams: unknown[] = [];
  if (query.workflow !== undefined) {
    scope.push(" AND (metadata_json::jsonb ->> 'workflow') = ?::text");
    scopeParams.push(query.workflow);
  }
  if (query.runId !== undefined) {
    scope.push(" AND (metadata_json::jsonb ->> 'runId') = ?::text");
    scopeParams.push(query.runId);
  }
  const min = query.minScore === undefined ? "" : ` AND 1 - ${distance} >= ?`;
  const text = `SELECT id, content, metadata_json, document_id, chunk_index, created_at_ms, 1 - ${distance} AS score
    FROM _smithers_vectors WHERE namespace = ?${filter.text}${scope.join("")}${min}
    ORDER BY ${distance}, id LIMIT ?`;
  const q = vectorText(query.embedding);
  const params = [q, query.namespace, ...filter.params, ...scopeParams, ...(query.minScore === undefined ? [] : [q, query.minScore]), q, query.k];
  const rows = await db.read("pgvectorSearch", (s: Sql) => s.all<PgVectorRow>(text, ...params));
  // A zero vector has no direction: pgvector answers NaN where the scan answers 0.
  return rows.map((r) => ({ ...r, score: Number.isNaN(Number(r.score)) ? 0 : Number(r.score), created_at_ms: Number(r.created_at_ms) }));
}
