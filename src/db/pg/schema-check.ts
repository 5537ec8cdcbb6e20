/**
 * Whether a PostgreSQL database's Smithers tables are current, read from the catalogs: no DDL and
 * no lock. Opening a current database (every open but the first after an upgrade) then waits on
 * nobody. The DDL itself would: CREATE INDEX IF NOT EXISTS takes a SHARE lock on its table even
 * when the index exists, so it waits behind any open transaction that wrote to the table (a step
 * of a process cut off mid-transaction), and every opener behind the schema lock waits with it.
 */
import { getTableConfig } from "drizzle-orm/pg-core";
import { decidedGateBackfillPending, RETIRED_INDEXES } from "../ensure.ts";
import type { Sql } from "../sql.ts";
import { pgInternalTables } from "./tables.ts";

/** A relation of the schema tables are created in (the search path's first), by name; NULL when absent. */
const relation = (name: string) => `to_regclass(quote_ident(current_schema()) || '.' || quote_ident(${name}))`;
const LIST = "unnest(string_to_array(?, ','))";

const CHECK = `SELECT current_schema() AS schema,
  (SELECT count(*) FROM ${LIST} AS r(name) WHERE ${relation("r.name")} IS NULL) AS missing,
  (SELECT count(*) FROM ${LIST} AS r(name) WHERE ${relation("r.name")} IS NOT NULL) AS retired,
  (SELECT count(*) FROM ${LIST} AS c(spec) WHERE NOT EXISTS (SELECT 1 FROM pg_attribute a
    WHERE a.attrelid = ${relation("split_part(c.spec, '.', 1)")} AND a.attname = split_part(c.spec, '.', 2) AND a.attnum > 0 AND NOT a.attisdropped)) AS "missingColumns"`;

/** What a current schema has: every table and index (names, comma-joined), every column (`table.column`). */
const expected = (() => {
  const relations: string[] = [];
  const columns: string[] = [];
  for (const table of Object.values(pgInternalTables)) {
    const config = getTableConfig(table);
    relations.push(config.name, ...config.indexes.map((i) => i.config.name!));
    columns.push(...config.columns.map((c) => `${config.name}.${c.name}`));
  }
  return { relations: relations.join(","), columns: columns.join(",") };
})();

/**
 * True when every internal table, column and index is there, no retired index is left, no
 * backfill is due, and (when `schema` is given) tables go to that schema (it exists).
 */
export async function pgSchemaCurrent(q: Sql, schema: string | undefined): Promise<boolean> {
  const row = await q.get<{ schema: string | null; missing: number; retired: number; missingColumns: number }>(
    CHECK,
    expected.relations,
    RETIRED_INDEXES.join(","),
    expected.columns,
  );
  if (!row || row.schema === null || (schema !== undefined && row.schema !== schema)) return false;
  if (Number(row.missing) + Number(row.retired) + Number(row.missingColumns) > 0) return false;
  return (await q.get(decidedGateBackfillPending())) === undefined;
}
