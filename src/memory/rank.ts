/** The pure part of recall: metadata filters and a top-k cosine ranking. */
import { SmithersError } from "../errors/index.ts";

type Scalar = string | number | boolean | null;

/** Each key: the metadata value must equal this scalar, or be one of this array's. */
export type MetadataFilter = Record<string, Scalar | readonly Scalar[]>;

function isScalar(value: unknown): value is Scalar {
  return value === null || ["string", "number", "boolean"].includes(typeof value);
}

export function validateFilter(filter: unknown): asserts filter is MetadataFilter {
  if (typeof filter !== "object" || filter === null || Array.isArray(filter)) {
    throw new SmithersError("INVALID_OPTION", "`filter` must be an object of metadata keys to values");
  }
  for (const [key, want] of Object.entries(filter)) {
    if (!(isScalar(want) || (Array.isArray(want) && want.every(isScalar)))) {
      throw new SmithersError("INVALID_OPTION", `filter.${key}: a string, number, boolean or null, or an array of them`);
    }
  }
}

export function matchesFilter(metadata: Record<string, unknown>, filter: MetadataFilter): boolean {
  for (const [key, want] of Object.entries(filter)) {
    const have = Object.hasOwn(metadata, key) ? metadata[key] : undefined;
    if (Array.isArray(want) ? !want.includes(have as Scalar) : have !== want) return false;
  }
  return true;
}

/**
 * Keeps the `k` items most similar to `query` seen so far (ties: the first offered wins), so a
 * scan of n chunks costs n dot products and no sort of all n.
 */
export function cosineRanker<T>(query: Float32Array, k: number, minScore = Number.NEGATIVE_INFINITY) {
  let qq = 0;
  for (let i = 0; i < query.length; i++) qq += query[i]! * query[i]!;
  const qNorm = Math.sqrt(qq);
  const top: { score: number; item: T }[] = [];
  return {
    offer(embedding: Float32Array, item: T): void {
      let dot = 0;
      let ee = 0;
      for (let i = 0; i < embedding.length; i++) {
        const e = embedding[i]!;
        dot += query[i]! * e;
        ee += e * e;
      }
      const score = qNorm === 0 || ee === 0 ? 0 : dot / (qNorm * Math.sqrt(ee));
      if (score < minScore || (top.length === k && score <= top[k - 1]!.score)) return;
      let at = top.length;
      while (at > 0 && top[at - 1]!.score < score) at--;
      top.splice(at, 0, { score, item });
      if (top.length > k) top.pop();
    },
    best(): { score: number; item: T }[] {
      return top;
    },
  };
}
