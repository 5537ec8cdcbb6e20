/**
 * A memory: chunks of text with their embeddings in `_smithers_vectors`, recalled by cosine
 * similarity. Each chunk carries the namespace, workflow and run it was remembered under, so a
 * recall can look at the whole namespace, one workflow's chunks, or one run's.
 *
 * Recall is a brute-force scan of the namespace in this process (see bench/vectors for the size
 * up to which that is fine), or on PostgreSQL with pgvector an exact scan in SQL by cosine
 * distance (db/adapters/pgvector.ts); embeddings are float32 BLOBs on SQLite and bytea on PostgreSQL.
 */
import { type SmithersDb, vectors } from "../db/index.ts";
import { SmithersError } from "../errors/index.ts";
import { type EmbeddingModelLike, embedTexts } from "./embed.ts";
import { cosineRanker, type MetadataFilter, matchesFilter, validateFilter } from "./rank.ts";

export type MemoryScope = "namespace" | "workflow" | "run";

export type MemoryOptions = {
  db: SmithersDb;
  /** Any AI SDK embedding model (see EmbeddingModelLike). */
  embedder: EmbeddingModelLike;
  /** The namespace chunks are stored in and recalled from (default "default"). */
  namespace?: string;
  /** Chunks remembered are tagged with this workflow; `scope: "workflow"` recalls only those. */
  workflow?: string;
  /** Chunks remembered are tagged with this run; `scope: "run"` recalls only those. */
  runId?: string;
  /** The embedding length every chunk and query must have (else MEMORY_DIMENSION_MISMATCH). */
  dimensions?: number;
  /** Retries of a failing embedding call, passed to the AI SDK (its default: 2). */
  maxRetries?: number;
};

/** A chunk to remember: its text, and optionally its id (re-remembering an id replaces it), metadata and document. */
export type MemoryChunk = {
  content: string;
  id?: string;
  metadata?: Record<string, unknown>;
  documentId?: string;
  chunkIndex?: number;
};

export type RememberOptions = {
  /** Metadata merged under each chunk's own. */
  metadata?: Record<string, unknown>;
  /** The document the chunks belong to; without their own chunkIndex they are numbered in order. */
  documentId?: string;
  /** Aborts the embedding call (MEMORY_EMBED_FAILED); nothing is written. */
  abortSignal?: AbortSignal;
};

export type RecallOptions = {
  /** How many chunks (default 5). */
  k?: number;
  /** Metadata each chunk must have: a value (equal) or an array of values (any of them). */
  filter?: MetadataFilter;
  /** Which chunks of the namespace: all (default), this memory's workflow's, or this memory's run's. */
  scope?: MemoryScope;
  /** Drop chunks whose cosine similarity is below this. */
  minScore?: number;
  abortSignal?: AbortSignal;
};

export type ForgetOptions = {
  ids?: readonly string[];
  documentId?: string;
  filter?: MetadataFilter;
  scope?: MemoryScope;
};

export type MemoryHit = {
  id: string;
  content: string;
  /** Cosine similarity to the query, -1..1. */
  score: number;
  metadata: Record<string, unknown>;
  documentId: string | null;
  chunkIndex: number | null;
  workflow: string | null;
  runId: string | null;
  createdAtMs: number;
};

export type Memory = {
  readonly namespace: string;
  /** Embeds and stores the chunks in one transaction; returns their ids in order. */
  remember(chunks: string | readonly (string | MemoryChunk)[], options?: RememberOptions): Promise<string[]>;
  /** The `k` chunks most similar to `query`, best first. */
  recall(query: string, options?: RecallOptions): Promise<MemoryHit[]>;
  /** Removes the chunks matching every given condition (all of the scope when none); returns how many. */
  forget(options?: ForgetOptions): Promise<number>;
  /**
   * Embeds the chunks and returns the rows `remember` would write, writing nothing: for a caller
   * that stores them in its own transaction (a task's retained digest, with the task's output).
   */
  prepare(chunks: string | readonly (string | MemoryChunk)[], options?: RememberOptions): Promise<vectors.NewVector[]>;
  /**
   * How recall ranks on this database: `pgvector` (PostgreSQL with the extension: in SQL, by
   * cosine distance) or `scan` (SQLite, or PostgreSQL without it: in this process), with the reason.
   */
  searchMethod(): Promise<vectors.VectorSearchMethod>;
};

/** What metadata_json holds: the caller's metadata and the scope the chunk was remembered under. */
type Stored = { metadata: Record<string, unknown>; workflow: string | null; runId: string | null };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function readStored(raw: unknown): Stored {
  const s = isRecord(raw) ? raw : {};
  return {
    metadata: isRecord(s.metadata) ? s.metadata : {},
    workflow: typeof s.workflow === "string" ? s.workflow : null,
    runId: typeof s.runId === "string" ? s.runId : null,
  };
}

function invalid(message: string): SmithersError {
  return new SmithersError("INVALID_OPTION", message);
}

/**
 * A memory over `db`'s `_smithers_vectors`.
 * @example
 * const memory = createMemory({ db, embedder: openai.embedding("text-embedding-3-small"), namespace: "support" });
 * await memory.remember(["Refunds take 5 days."], { metadata: { source: "faq" } });
 * const hits = await memory.recall("how long is a refund?", { k: 3, filter: { source: "faq" } });
 */
export function createMemory(options: MemoryOptions): Memory {
  const namespace = options.namespace ?? "default";
  if (typeof namespace !== "string" || namespace === "") throw invalid("createMemory: `namespace` must be a non-empty string");
  if (!options.embedder) throw invalid("createMemory: `embedder` (an AI SDK embedding model) is required");
  const { dimensions } = options;
  if (dimensions !== undefined && !(Number.isInteger(dimensions) && dimensions > 0)) {
    throw invalid("createMemory: `dimensions` must be a whole number > 0");
  }
  const scope = { workflow: options.workflow ?? null, runId: options.runId ?? null };
  const embed = (values: string[], abortSignal?: AbortSignal) =>
    embedTexts(options.embedder, values, { dimensions, maxRetries: options.maxRetries, abortSignal });

  function inScope(stored: Stored, which: MemoryScope = "namespace"): boolean {
    if (which === "namespace") return true;
    if (which === "workflow") {
      if (scope.workflow === null) throw invalid('scope "workflow" needs a memory created with `workflow`');
      return stored.workflow === scope.workflow;
    }
    if (which === "run") {
      if (scope.runId === null) throw invalid('scope "run" needs a memory created with `runId`');
      return stored.runId === scope.runId;
    }
    throw invalid(`scope must be "namespace", "workflow" or "run", not ${JSON.stringify(which)}`);
  }

  async function prepare(chunks: string | readonly (string | MemoryChunk)[], opts: RememberOptions = {}): Promise<vectors.NewVector[]> {
    const list = (typeof chunks === "string" ? [chunks] : chunks).map((c) => (typeof c === "string" ? { content: c } : c));
    for (const c of list) {
      if (!c || typeof c.content !== "string" || c.content === "") throw invalid("remember: each chunk needs non-empty `content`");
    }
    if (opts.metadata !== undefined && !isRecord(opts.metadata)) throw invalid("remember: `metadata` must be an object");
    const embeddings = await embed(
      list.map((c) => c.content),
      opts.abortSignal,
    );
    const now = Date.now();
    return list.map((c, i) => ({
      id: c.id ?? crypto.randomUUID(), // the global: node:crypto would cost every process its load
      namespace,
      content: c.content,
      embedding: embeddings[i]!,
      metadata: { metadata: { ...opts.metadata, ...c.metadata }, ...scope } satisfies Stored,
      documentId: c.documentId ?? opts.documentId ?? null,
      chunkIndex: c.chunkIndex ?? (opts.documentId !== undefined ? i : null),
      createdAtMs: now,
    }));
  }

  async function remember(chunks: string | readonly (string | MemoryChunk)[], opts: RememberOptions = {}): Promise<string[]> {
    const rows = await prepare(chunks, opts);
    await vectors.upsertVectors(options.db, namespace, rows);
    return rows.map((r) => r.id);
  }

  async function recall(query: string, opts: RecallOptions = {}): Promise<MemoryHit[]> {
    const k = opts.k ?? 5;
    if (!(Number.isInteger(k) && k > 0)) throw invalid("recall: `k` must be a whole number > 0");
    if (typeof query !== "string" || query === "") throw invalid("recall: the query must be a non-empty string");
    if (opts.filter !== undefined) validateFilter(opts.filter);
    inScope({ metadata: {}, ...scope }, opts.scope);
    const [embedding] = await embed([query], opts.abortSignal);
    const how = await vectors.vectorSearchMethod(options.db);
    if (how.method === "pgvector") return recallPgvector(how.extensionSchema, embedding!, k, opts);
    const rank = cosineRanker<{ row: vectors.VectorRecord; stored: Stored }>(embedding!, k, opts.minScore);
    for (const row of await vectors.scanVectors(options.db, namespace)) {
      if (row.dimensions !== embedding!.length) {
        throw new SmithersError(
          "MEMORY_DIMENSION_MISMATCH",
          `Namespace "${namespace}" holds embeddings of ${row.dimensions} dimensions; the query has ${embedding!.length}`,
        );
      }
      const stored = readStored(row.metadata);
      if (!inScope(stored, opts.scope) || (opts.filter && !matchesFilter(stored.metadata, opts.filter))) continue;
      rank.offer(row.embedding, { row, stored });
    }
    return rank.best().map(({ score, item: { row, stored } }) => ({
      id: row.id,
      content: row.content,
      score,
      metadata: stored.metadata,
      documentId: row.documentId,
      chunkIndex: row.chunkIndex,
      workflow: stored.workflow,
      runId: stored.runId,
      createdAtMs: row.createdAtMs,
    }));
  }

  /** recall ranked by PostgreSQL (pgvector), filters and scope in its WHERE clause. */
  async function recallPgvector(schema: string, embedding: Float32Array, k: number, opts: RecallOptions): Promise<MemoryHit[]> {
    const rows = await vectors.searchPgvector(
      options.db,
      schema,
      {
        namespace,
        embedding,
        k,
        ...(opts.filter ? { filter: opts.filter } : {}),
        ...(opts.scope === "workflow" ? { workflow: scope.workflow! } : {}),
        ...(opts.scope === "run" ? { runId: scope.runId! } : {}),
        ...(opts.minScore === undefined ? {} : { minScore: opts.minScore }),
      },
      vectors.blobToEmbedding,
    );
    return rows.map((row) => {
      const stored = readStored(row.metadataJson === null ? null : JSON.parse(row.metadataJson));
      return {
        id: row.id,
        content: row.content,
        score: row.score,
        metadata: stored.metadata,
        documentId: row.documentId,
        chunkIndex: row.chunkIndex === null ? null : Number(row.chunkIndex),
        workflow: stored.workflow,
        runId: stored.runId,
        createdAtMs: row.createdAtMs,
      };
    });
  }

  async function forget(opts: ForgetOptions = {}): Promise<number> {
    if (opts.filter !== undefined) validateFilter(opts.filter);
    inScope({ metadata: {}, ...scope }, opts.scope);
    const ids = opts.ids === undefined ? undefined : new Set(opts.ids);
    const doomed = (await vectors.scanVectors(options.db, namespace))
      .filter((row) => {
        const stored = readStored(row.metadata);
        return (
          (ids === undefined || ids.has(row.id)) &&
          (opts.documentId === undefined || row.documentId === opts.documentId) &&
          inScope(stored, opts.scope) &&
          (opts.filter === undefined || matchesFilter(stored.metadata, opts.filter))
        );
      })
      .map((row) => row.id);
    return vectors.deleteVectorIds(options.db, namespace, doomed);
  }

  return { namespace, remember, recall, forget, prepare, searchMethod: () => vectors.vectorSearchMethod(options.db) };
}
