import type { Database } from "bun:sqlite";
import { createTableStatements } from "./ddl.ts";
import { internalTables } from "./internal-schema.ts";

/** Indexes earlier versions created and this one no longer uses: each write would still pay for them. */
const RETIRED_INDEXES = ["_smithers_events_dedup_idx", "_smithers_attempts_run_state_idx"];

/** CREATE TABLE IF NOT EXISTS for every `_smithers_*` table and its indexes, dropping retired ones. Idempotent. */
export function ensureSmithersTables(sqlite: Database): void {
  const statements = [
    ...Object.values(internalTables).flatMap((table) => createTableStatements(table)),
    ...RETIRED_INDEXES.map((name) => `DROP INDEX IF EXISTS "${name}"`),
  ];
  // IMMEDIATE so a concurrent opener waits on the busy handler instead of failing to upgrade a read lock.
  sqlite
    .transaction(() => {
      for (const sql of statements) sqlite.exec(sql);
    })
    .immediate();
}
