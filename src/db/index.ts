export * from "./smithers-db.ts";
export * from "./internal-schema.ts";
export * from "./constants.ts";
export { ensureSmithersTables } from "./ensure.ts";
export { dbRetries, dbRetryCount, isRetryableSqliteError, retryDelayMs, withSqliteWriteRetry } from "./retry.ts";
export * as runs from "./adapters/runs.ts";
