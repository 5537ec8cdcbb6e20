/**
 * Embedding texts with an AI SDK embedding model. `ai` is an optional peer: it is imported here
 * only when a memory first embeds, so users who never use memory never load it, and a missing
 * `ai` is a clear MEMORY_AI_SDK_MISSING rather than a module-not-found at start-up.
 */
import { SmithersError } from "../errors/index.ts";

/**
 * An AI SDK embedding model: a provider's model object (`openai.embedding("text-embedding-3-small")`),
 * any object implementing the SDK's EmbeddingModel interface, or a gateway model id string.
 */
export type EmbeddingModelLike =
  | string
  | {
      readonly specificationVersion: string;
      readonly provider: string;
      readonly modelId: string;
      doEmbed(options: { values: string[]; abortSignal?: AbortSignal }): PromiseLike<{ embeddings: number[][] }>;
    };

type EmbedMany = (args: { model: unknown; values: string[]; maxRetries?: number; abortSignal?: AbortSignal }) => Promise<{
  embeddings: number[][];
}>;

let loaded: Promise<EmbedMany> | undefined;

function loadEmbedMany(): Promise<EmbedMany> {
  loaded ??= import("ai").then(
    (mod) => (mod as unknown as { embedMany: EmbedMany }).embedMany,
    (cause: unknown) => {
      loaded = undefined;
      throw new SmithersError("MEMORY_AI_SDK_MISSING", "Memory embeds through the `ai` package: install it (npm install ai)", { cause });
    },
  );
  return loaded;
}

/**
 * The embeddings of `values`, one Float32Array each, all of one length (`dimensions` when given).
 * A model that throws, answers the wrong count, or answers non-finite numbers is MEMORY_EMBED_FAILED.
 */
export async function embedTexts(
  model: EmbeddingModelLike,
  values: string[],
  options: { dimensions?: number; maxRetries?: number; abortSignal?: AbortSignal } = {},
): Promise<Float32Array[]> {
  if (values.length === 0) return [];
  const embedMany = await loadEmbedMany();
  let embeddings: number[][];
  try {
    ({ embeddings } = await embedMany({ model, values, maxRetries: options.maxRetries, abortSignal: options.abortSignal }));
  } catch (cause) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    throw new SmithersError("MEMORY_EMBED_FAILED", `The embedding model failed: ${reason}`, { cause });
  }
  if (!Array.isArray(embeddings) || embeddings.length !== values.length) {
    throw new SmithersError("MEMORY_EMBED_FAILED", `The embedding model answered ${embeddings?.length ?? 0} embeddings for ${values.length} texts`);
  }
  const vectors = embeddings.map((e) => {
    if (!Array.isArray(e) || e.length === 0 || !e.every(Number.isFinite)) {
      throw new SmithersError("MEMORY_EMBED_FAILED", "The embedding model answered an empty or non-numeric embedding");
    }
    return Float32Array.from(e);
  });
  const expected = options.dimensions ?? vectors[0]!.length;
  const wrong = vectors.find((v) => v.length !== expected);
  if (wrong) {
    throw new SmithersError("MEMORY_DIMENSION_MISMATCH", `The embedding model answered ${wrong.length} dimensions where ${expected} were expected`);
  }
  return vectors;
}
