import { useEffect, useState } from "preact/hooks";
import { getJson } from "./api.ts";

/**
 * GET `path` as JSON, again whenever `path` or `version` changes (a request still in flight is
 * aborted): the data (null until it arrives) and the error of the last try (null when it worked).
 */
export function useJson<T>(path: string, version?: unknown): { data: T | null; error: unknown } {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    const abort = new AbortController();
    getJson<T>(path, abort.signal)
      .then((d) => {
        setData(d);
        setError(null);
      })
      .catch((e: unknown) => abort.signal.aborted || setError(e));
    return () => abort.abort();
  }, [path, version]);
  return { data, error };
}
