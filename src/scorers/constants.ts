/** How long a scorer may take when its binding sets no `timeoutMs`. */
export const DEFAULT_SCORER_TIMEOUT_MS = 30_000;
