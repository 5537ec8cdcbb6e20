import type { Database } from "bun:sqlite";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import { getTableConfig } from "drizzle-orm/sqlite-core/utils";
import { addColumnStatement, createTableStatements } from "./ddl.ts";
import { sqlNames } from "./adapters/shared.ts";
import { WAITING_STATUSES } from "./constants.ts";
import { internalTables, smithersApprovals, smithersNodes, smithersRuns } from "./internal-schema.ts";

/** Indexes earlier versions created and this one no longer uses: each write would still pay for them. */
export const RETIRED_INDEXES = ["_smithers_events_dedup_idx", "_smithers_attempts_run_state_idx"];

/**
 * `PRAGMA user_version` of a SQLite database whose runs have been through decidedGateBackfill.
 * The backfill reads every waiting run without a wake time (all runs waiting on a person or a
 * signal), so it runs once per database, not on every open.
 */
export const GATES_BACKFILLED_USER_VERSION = 1;

/** Which waiting runs have a decided gate but no wake time (see decidedGateBackfill), and the gates. */
function undatedDecidedGates(): { where: string; gates: string } {
  const r = sqlNames(smithersRuns);
  const n = sqlNames(smithersNodes);
  const a = sqlNames(smithersApprovals);
  const gates = `FROM ${n.$table} n JOIN ${a.$table} a ON a.${a.runId} = n.${n.runId} AND a.${a.nodeId} = n.${n.nodeId} AND a.${a.iteration} = n.${n.iteration}
    WHERE n.${n.runId} = ${r.$table}.${r.runId} AND n.${n.state} = 'waiting-approval' AND a.${a.status} <> 'requested'`;
  const waiting = WAITING_STATUSES.map((status) => `'${status}'`).join(", ");
  return { where: `${r.status} IN (${waiting}) AND ${r.wakeAtMs} IS NULL AND EXISTS (SELECT 1 ${gates})`, gates };
}

/** UPDATE making waiting runs with a decided gate due (see ensureSmithersTables); names from the Drizzle tables. */
export function decidedGateBackfill(): string {
  const r = sqlNames(smithersRuns);
  const a = sqlNames(smithersApprovals);
  const { where, gates } = undatedDecidedGates();
  return `UPDATE ${r.$table} SET ${r.wakeAtMs} = coalesce((SELECT max(a.${a.decidedAtMs}) ${gates}), 0)
    WHERE ${where}`;
}

/** A query with a row when decidedGateBackfill has something to do (a plain read: it waits on no lock). */
export function decidedGateBackfillPending(): string {
  return `SELECT 1 AS pending FROM ${sqlNames(smithersRuns).$table} WHERE ${undatedDecidedGates().where} LIMIT 1`;
}

/** ADD COLUMN for each column a table created by an earlier version lacks (must run before its indexes). */
function addMissingColumns(sqlite: Database, table: SQLiteTable): void {
  const { name, columns } = getTableConfig(table);
  const present = new Set(
    sqlite
      .query<{ name: string }, []>(`PRAGMA table_info("${name}")`)
      .all()
      .map((c) => c.name),
  );
  for (const column of columns) if (!present.has(column.name)) sqlite.exec(addColumnStatement(name, column));
}

/**
 * Rebuilds a table whose columns an earlier version declared NOT NULL and this one allows null
 * (`_smithers_scorers.score`: null while a score is pending or failed). SQLite cannot drop a
 * constraint in place: the rows are copied into a table of the new shape, which takes the old
 * one's name; its indexes are made again by the caller.
 */
function relaxNotNull(sqlite: Database, table: SQLiteTable, create: string): void {
  const { name, columns } = getTableConfig(table);
  const onDisk = sqlite.query<{ name: string; notnull: number }, []>(`PRAGMA table_info("${name}")`).all();
  const nullable = new Set(columns.filter((c) => !c.notNull && !c.primary).map((c) => c.name));
  if (!onDisk.some((c) => c.notnull === 1 && nullable.has(c.name))) return;
  const fresh = `${name}__relaxed`;
  const names = onDisk.map((c) => `"${c.name}"`).join(", ");
  sqlite.exec(create.replace(`"${name}"`, `"${fresh}"`));
  sqlite.exec(`INSERT INTO "${fresh}" (${names}) SELECT ${names} FROM "${name}"`);
  sqlite.exec(`DROP TABLE "${name}"`);
  sqlite.exec(`ALTER TABLE "${fresh}" RENAME TO "${name}"`);
}

/**
 * CREATE TABLE IF NOT EXISTS for every `_smithers_*` table, the columns an older database lacks,
 * then its indexes, dropping retired ones; the first open by this version also backfills wake
 * times (see GATES_BACKFILLED_USER_VERSION). Idempotent.
 */
export function ensureSmithersTables(sqlite: Database): void {
  // A database this version set up already says so in its header: opening it takes no write lock,
  // so a process starting while others write (a worker, a server, an answer from the CLI) neither
  // waits on them nor fails with "database is locked".
  if (schemaIsCurrent(sqlite)) return;
  // IMMEDIATE so a concurrent opener waits on the busy handler instead of failing to upgrade a read lock.
  sqlite
    .transaction(() => {
      // Read under the write lock. A table created now has every column; a database without a
      // runs table (a new one) has no retired index and no waiting run to repair.
      const existing = new Set(
        sqlite
          .query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table'")
          .all()
          .map((t) => t.name),
      );
      // Tables this version lacks (all of them in a new database) are created, with their
      // indexes, in one batch of statements; a table that exists gets the columns it lacks first.
      const batch: string[] = [];
      for (const { name, table, statements } of internalDdl()) {
        const [create, ...indexes] = statements;
        if (existing.has(name)) {
          addMissingColumns(sqlite, table);
          relaxNotNull(sqlite, table, create!);
          for (const sql of indexes) sqlite.exec(sql);
        } else batch.push(create!, ...indexes);
      }
      if (batch.length > 0) sqlite.exec(batch.join(";\n"));
      sqlite.exec(`PRAGMA application_id = ${schemaStamp()}`);
      if (!existing.has(getTableConfig(smithersRuns).name)) {
        sqlite.exec(`PRAGMA user_version = ${GATES_BACKFILLED_USER_VERSION}`); // nothing to backfill in a new database
        return;
      }
      for (const name of RETIRED_INDEXES) sqlite.exec(`DROP INDEX IF EXISTS "${name}"`);
      // Runs waiting on a gate decided before deciding made a run due (wake_at_ms): due now, so the
      // daemon, which finds runs by their wake time alone, still wakes them. Since then deciding
      // marks the run due itself, so once done (recorded in the same transaction) it is not repeated.
      const { user_version } = sqlite.query<{ user_version: number }, []>("PRAGMA user_version").get()!;
      if (user_version < GATES_BACKFILLED_USER_VERSION) {
        sqlite.exec(decidedGateBackfill());
        sqlite.exec(`PRAGMA user_version = ${GATES_BACKFILLED_USER_VERSION}`);
      }
    })
    .immediate();
}

let stamp: number | undefined;
/** schemaStamp() as the bundle's build computed it (a `define` of scripts/build-bundle.ts); undeclared when run from src/. */
declare const SMITHERS_SCHEMA_STAMP: number | undefined;
let ddl: { name: string; table: SQLiteTable; statements: string[] }[] | undefined;

/** Each internal table's name and DDL (CREATE TABLE, then its indexes), built once per process. */
function internalDdl(): { name: string; table: SQLiteTable; statements: string[] }[] {
  ddl ??= Object.values(internalTables).map((table) => ({ name: getTableConfig(table).name, table, statements: createTableStatements(table) }));
  return ddl;
}

/**
 * A 31-bit digest of every internal table's DDL and the retired indexes: what `PRAGMA
 * application_id` holds once ensureSmithersTables has set a database up. Another version (another
 * table, column or index) has another stamp, so its first open sets the schema up again.
 */
export function schemaStamp(): number {
  // The bundle has it computed at build time (scripts/build-bundle.ts): making the DDL text is a few ms of a start.
  if (stamp === undefined && typeof SMITHERS_SCHEMA_STAMP === "number") stamp = SMITHERS_SCHEMA_STAMP;
  if (stamp === undefined) {
    const text = internalDdl()
      .flatMap((t) => t.statements)
      .concat(RETIRED_INDEXES)
      .join("\n");
    stamp = Number(Bun.hash.crc32(text) & 0x7fffffff) || 1;
  }
  return stamp;
}

/** Whether the database was set up by this version and its one-off backfill is done: two reads of its header, no lock. */
function schemaIsCurrent(sqlite: Database): boolean {
  const read = (pragma: string) => Object.values(sqlite.query<Record<string, number>, []>(`PRAGMA ${pragma}`).get() ?? {})[0];
  return read("application_id") === schemaStamp() && (read("user_version") ?? 0) >= GATES_BACKFILLED_USER_VERSION;
}
