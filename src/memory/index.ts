/** Memory: text chunks with embeddings in `_smithers_vectors`, recalled by cosine similarity. */
export {
  createMemory,
  type ForgetOptions,
  type Memory,
  type MemoryChunk,
  type MemoryHit,
  type MemoryOptions,
  type MemoryScope,
  type RecallOptions,
  type RememberOptions,
} from "./memory.ts";
export type { EmbeddingModelLike } from "./embed.ts";
export type { MetadataFilter } from "./rank.ts";
export { memoryTools } from "./tools.ts";

/** `createSmithers(schemas, { memory })`: the embedding model behind every `<Memory>` of the workflow. */
export type WorkflowMemoryOptions = {
  /** Any AI SDK embedding model (see EmbeddingModelLike). */
  embedder: import("./embed.ts").EmbeddingModelLike;
  /** The embedding length every chunk and query must have (else MEMORY_DIMENSION_MISMATCH). */
  dimensions?: number;
  /** Retries of a failing embedding call, passed to the AI SDK (its default: 2). */
  maxRetries?: number;
};
