import type { Database } from "bun:sqlite";
import { createTableStatements } from "./ddl.ts";
import { internalTables } from "./internal-schema.ts";

/** CREATE TABLE IF NOT EXISTS for every `_smithers_*` table and its indexes. Idempotent. */
export function ensureSmithersTables(sqlite: Database): void {
  const statements = Object.values(internalTables).flatMap((table) => createTableStatements(table));
  // IMMEDIATE so a concurrent opener waits on the busy handler instead of failing to upgrade a read lock.
  sqlite
    .transaction(() => {
      for (const sql of statements) sqlite.exec(sql);
    })
    .immediate();
}
