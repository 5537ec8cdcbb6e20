/**
 * A deterministic local embedder for memory tests and benches: each lower-cased word is hashed
 * (FNV-1a) into one of `dimensions` buckets, with a sign from another bit of the hash, so texts
 * sharing words have a positive cosine and nothing is random. `hashEmbedding` is the pure
 * function; `hashEmbeddingModel` wraps it in the AI SDK's EmbeddingModel (v3) interface.
 */

function fnv1a(word: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < word.length; i++) {
    h ^= word.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

export function hashEmbedding(text: string, dimensions = 384): number[] {
  const v = new Array<number>(dimensions).fill(0);
  for (const word of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    const h = fnv1a(word);
    v[h % dimensions]! += h >>> 31 === 1 ? -1 : 1;
  }
  return v;
}

/** An AI SDK embedding model over hashEmbedding; `calls` logs each batch it was asked for. */
export function hashEmbeddingModel(dimensions = 384) {
  const calls: string[][] = [];
  return {
    specificationVersion: "v3" as const,
    provider: "test-hash",
    modelId: `hash-${dimensions}`,
    maxEmbeddingsPerCall: 64,
    supportsParallelCalls: false,
    calls,
    async doEmbed({ values }: { values: string[] }) {
      calls.push(values);
      return { embeddings: values.map((t) => hashEmbedding(t, dimensions)), warnings: [] };
    },
  };
}
