/**
 * pgvector for `_smithers_vectors` on PostgreSQL. When the `vector` extension is installed (or
 * `CREATE EXTENSION IF NOT EXISTS vector` succeeds), the table gains a column `embedding_v` of
 * pgvector's type beside the float32 BYTEA, and recall ranks in SQL by cosine distance (`<=>`)
 * with the metadata filters and scope in the WHERE clause. Without it, recall stays the
 * brute-force scan in JS (memory.ts), and `vectorSearchMethod` says why.
 *
 * Writes are the same on both backends (the BYTEA is the truth): a trigger clears `embedding_v`
 * when a row's embedding changes, and a search first fills the column for the namespace's rows
 * that lack it. No index: an HNSW or IVFFlat index is approximate and would make pgvector's
 * top-k differ from SQLite's on the same data; a filtered exact scan is what bench/vectors measures.
 */
import { SmithersError } from "../../errors/index.ts";
import type { Sql } from "../sql.ts";
import type { SmithersDb } from "../store.ts";

export type VectorSearchMethod = { method: "pgvector"; extensionSchema: string } | { method: "scan"; reason: string };

const probed = new WeakMap<SmithersDb, Promise<VectorSearchMethod>>();
/** Column values are written as pgvector's text form in batches of this many rows. */
const FILL_BATCH = 500;

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
  const installed = () => db.read("pgvectorSchema", (q) => q.get<{ schema: string }>("SELECT extnamespace::regnamespace::text AS schema FROM pg_extension WHERE extname = 'vector'"));
  let ext = await installed();
  if (!ext) {
    await db.write("pgvectorCreate", (q) => q.exec("CREATE EXTENSION IF NOT EXISTS vector")).catch(async (error: unknown) => {
      if (!(await installed())) throw error; // another process may have created it meanwhile
    });
    ext = await installed();
    if (!ext) throw new Error("CREATE EXTENSION vector left no extension");
  }
  const schema = ext.schema.replace(/^"|"$/g, "");
  await db.write("pgvectorColumn", async (q) => {
    const ready = await q.get(
      `SELECT 1 FROM pg_attribute a JOIN pg_trigger t ON t.tgrelid = a.attrelid AND t.tgname = '_smithers_vectors_stale'
       WHERE a.attrelid = to_regclass(quote_ident(current_schema()) || '._smithers_vectors') AND a.attname = 'embedding_v' AND NOT a.attisdropped`,
    );
    if (ready) return;
    await q.exec(`ALTER TABLE _smithers_vectors ADD COLUMN IF NOT EXISTS embedding_v ${quoteIdent(schema)}.vector`);
    await q.exec(`CREATE OR REPLACE FUNCTION _smithers_vectors_stale() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF NEW.embedding IS DISTINCT FROM OLD.embedding THEN NEW.embedding_v := NULL; END IF;
  RETURN NEW;
END $fn$`);
    await q.exec("CREATE OR REPLACE TRIGGER _smithers_vectors_stale BEFORE UPDATE ON _smithers_vectors FOR EACH ROW EXECUTE FUNCTION _smithers_vectors_stale()");
  });
  return { method: "pgvector", extensionSchema: schema };
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
  const other = await db.read("pgvectorDims", (q: Sql) =>
    q.get<{ dimensions: number }>("SELECT dimensions FROM _smithers_vectors WHERE namespace = ? AND dimensions <> ? LIMIT 1", query.namespace, query.embedding.length),
  );
  if (other) {
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
