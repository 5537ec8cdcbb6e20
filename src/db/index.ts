export { SqliteDb, checkDurability, type Drizzle } from "./smithers-db.ts";
export type { SmithersDbOptions, StorageSize } from "./store.ts";
export { adoptOpenDb, databaseKey, firstContact, openSmithersDb, isPostgresUrl, SmithersDb } from "./open.ts";
export * from "./sql.ts";
export * from "./internal-schema.ts";
export * from "./constants.ts";
export { ensureSmithersTables } from "./ensure.ts";
export { dbRetries, dbRetryCount, isRetryableSqliteError, retryDelayMs, withSqliteWriteRetry } from "./retry.ts";
export * as runs from "./adapters/runs.ts";
export * as nodes from "./adapters/nodes.ts";
export * as attempts from "./adapters/attempts.ts";
export type { Usage } from "../contract/index.ts";
export * as ralph from "./adapters/ralph.ts";
export * as events from "./adapters/events.ts";
export * as signals from "./adapters/signals.ts";
export * as humanRequests from "./adapters/human-requests.ts";
export * as approvals from "./adapters/approvals.ts";
export * as cron from "./adapters/cron.ts";
export * as sandboxes from "./adapters/sandboxes.ts";
export * as toolCalls from "./adapters/tool-calls.ts";
export * as cache from "./adapters/cache.ts";
export * as scorers from "./adapters/scorers.ts";
export * as vectors from "./adapters/vectors.ts";
export * as metrics from "./adapters/metrics.ts";
export { computeSchemaSignature, hashSchemaSignature, schemaSignatureText } from "./schema-signature.ts";
export { camelToSnake } from "./output-schema.ts";
export {
  loadInput,
  loadStoredInput,
  loadStoredOutputs,
  type StoredOutputKey,
  loadOutputs,
  loadOutputRows,
  loadOutputKeys,
  readOutputKeys,
  readOutputRowNow,
  readOutputRowsNow,
  normalizeRow,
  stripBookkeeping,
  writeInput,
  type OutputKeys,
  type OutputRow,
  type OutputSnapshot,
} from "./snapshot.ts";
export {
  migrateOutputTables,
  OutputRegistry,
  outputRowFor,
  readOutputRow,
  readOutputRows,
  writeOutputRow,
  copyLatestOutputRows,
  type MigrationReport,
  type OutputTableInfo,
  type OutputTarget,
} from "./output-tables.ts";
export type { SQLiteTable } from "drizzle-orm/sqlite-core";
export * as frames from "./adapters/frames.ts";
export * as history from "./adapters/history.ts";
export * as queue from "./adapters/queue.ts";
export * as limits from "./adapters/limits.ts";
export { WORK_CHANNEL } from "./adapters/shared.ts";
export * as retention from "./adapters/retention.ts";
export * as activity from "./adapters/activity.ts";
