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
