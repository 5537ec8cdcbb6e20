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
import { smithersVectors } from "../internal-schema.ts";
import type { Sql } from "../sql.ts";
import type { SmithersDb } from "../store.ts";
import { sqlNames } from "./shared.ts";

export type VectorSearchMethod = { method: "pgvector"; extensionSchema: string } | { method: "scan"; reason: string };

const probed = new WeakMap<SmithersDb, Promise<VectorSearchMethod>>();
/** Column values are written as pgvector's text form in batches of this many rows. */
const FILL_BATCH = 2000;

const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;

const v = sqlNames(smithersVectors);
/** What pgvector adds to the table: PostgreSQL's alone, so not in internal-schema.ts (which both dialects share). */
const TABLE = "_smithers_vectors";
const VECTOR_COLUMN = "embedding_v";
const STALE = `${TABLE}_stale`;
const UNFILLED_INDEX = `${TABLE}_unfilled_idx`;
const ev = quoteIdent(VECTOR_COLUMN);

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
      `SELECT 1 FROM pg_attribute a JOIN pg_trigger t ON t.tgrelid = a.attrelid AND t.tgname = ?
       WHERE a.attrelid = to_regclass(quote_ident(current_schema()) || '.' || ?) AND a.attname = ? AND NOT a.attisdropped
         AND to_regclass(quote_ident(current_schema()) || '.' || ?) IS NOT NULL`,
      STALE,
      TABLE,
      VECTOR_COLUMN,
      UNFILLED_INDEX,
    );
    if (ready) return;
    await q.exec(`ALTER TABLE ${v.$table} ADD COLUMN IF NOT EXISTS ${ev} ${quoteIdent(schema)}.vector`);
    // The ranking reads embedding_v of every row: kept in the row (MAIN), with the BYTEA (read only
    // by the scan path) the first moved out to TOAST. Out of line, each row's vector is one more
    // TOAST lookup, which is most of a search's time.
    await q.exec(`ALTER TABLE ${v.$table} ALTER COLUMN ${ev} SET STORAGE MAIN, ALTER COLUMN ${v.embedding} SET STORAGE EXTERNAL`);
    // A writer that set no embedding_v with a new embedding (one that knows nothing of pgvector) leaves the column to be filled again.
    // Compared as text: the extension's `=` may live in a schema outside the writer's search path.
    await q.exec(`CREATE OR REPLACE FUNCTION ${quoteIdent(STALE)}() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF NEW.${v.embedding} IS DISTINCT FROM OLD.${v.embedding} AND NEW.${ev}::text IS NOT DISTINCT FROM OLD.${ev}::text THEN NEW.${ev} := NULL; END IF;
  RETURN NEW;
END $fn$`);
    await q.exec(`CREATE OR REPLACE TRIGGER ${quoteIdent(STALE)} BEFORE UPDATE ON ${v.$table} FOR EACH ROW EXECUTE FUNCTION ${quoteIdent(STALE)}()`);
    // Finding the rows to fill is an index lookup, not a scan of the namespace.
    await q.exec(`CREATE INDEX IF NOT EXISTS ${quoteIdent(UNFILLED_INDEX)} ON ${v.$table} (${v.namespace}) WHERE ${ev} IS NULL`);
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
  const columns = [v.id, v.namespace, v.content, v.embedding, v.dimensions, v.metadataJson, v.documentId, v.chunkIndex, v.createdAtMs, ev];
  const text = `INSERT INTO ${v.$table} (${columns.join(", ")})
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?::${quoteIdent(schema)}.vector)
    ON CONFLICT (${v.id}) DO UPDATE SET ${columns
      .slice(1)
      .map((c) => `${c} = excluded.${c}`)
      .join(", ")}`;
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
        `SELECT ${v.id} AS id, ${v.embedding} AS embedding FROM ${v.$table} WHERE ${v.namespace} = ? AND ${ev} IS NULL LIMIT ?`,
        namespace,
        FILL_BATCH,
      );
      if (rows.length === 0) return true;
      await q.run(
        `UPDATE ${v.$table} AS t SET ${ev} = u.e::${quoteIdent(schema)}.vector FROM unnest(?::text[], ?::text[]) AS u(id, e) WHERE t.${v.id} = u.id`,
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
  metadataJson: string | null;
  documentId: string | null;
  chunkIndex: number | null;
  createdAtMs: number;
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
    parts.push(`((${v.metadataJson}::jsonb -> 'metadata') -> ?::text) IN (${values.map(() => "?::jsonb").join(", ")})`);
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
    q.get<{ dimensions: number }>(`SELECT ${v.dimensions} AS dimensions FROM ${v.$table} WHERE ${v.namespace} = ? LIMIT 1`, query.namespace),
  );
  if (other && Number(other.dimensions) !== query.embedding.length) {
    throw new SmithersError(
      "MEMORY_DIMENSION_MISMATCH",
      `Namespace "${query.namespace}" holds embeddings of ${other.dimensions} dimensions; the query has ${query.embedding.length}`,
    );
  }
  await fillMissing(db, schema, query.namespace, decode);
  const vector = `${quoteIdent(schema)}.vector`;
  const distance = `(${ev} OPERATOR(${quoteIdent(schema)}.<=>) ?::${vector})`;
  const filter = filterSql(query.filter);
  const scope: string[] = [];
  const scopeParams: unknown[] = [];
  if (query.workflow !== undefined) {
    scope.push(` AND (${v.metadataJson}::jsonb ->> 'workflow') = ?::text`);
    scopeParams.push(query.workflow);
  }
  if (query.runId !== undefined) {
    scope.push(` AND (${v.metadataJson}::jsonb ->> 'runId') = ?::text`);
    scopeParams.push(query.runId);
  }
  const min = query.minScore === undefined ? "" : ` AND 1 - ${distance} >= ?`;
  const text = `SELECT ${v.id} AS id, ${v.content} AS content, ${v.metadataJson} AS "metadataJson", ${v.documentId} AS "documentId",
      ${v.chunkIndex} AS "chunkIndex", ${v.createdAtMs} AS "createdAtMs", 1 - ${distance} AS score
    FROM ${v.$table} WHERE ${v.namespace} = ?${filter.text}${scope.join("")}${min}
    ORDER BY ${distance}, ${v.id} LIMIT ?`;
  const q = vectorText(query.embedding);
  const params = [q, query.namespace, ...filter.params, ...scopeParams, ...(query.minScore === undefined ? [] : [q, query.minScore]), q, query.k];
  const rows = await db.read("pgvectorSearch", (s: Sql) => s.all<PgVectorRow>(text, ...params));
  // A zero vector has no direction: pgvector answers NaN where the scan answers 0.
  return rows.map((r) => ({ ...r, score: Number.isNaN(Number(r.score)) ? 0 : Number(r.score), createdAtMs: Number(r.createdAtMs) }));
}
