/**
 * PostgreSQL DDL computed from Drizzle pg-core tables (themselves derived by toPgTable), the
 * counterpart of ../ddl.ts: same quoting, same idempotent CREATE … IF NOT EXISTS, same
 * forward-only rule (columns are added, never altered or dropped).
 */
import { is } from "drizzle-orm/entity";
import { SQL } from "drizzle-orm/sql";
import { getTableConfig, type PgColumn, type PgTable } from "drizzle-orm/pg-core";
import { quoteIdentifier as quote } from "../ddl.ts";

/** A default as a SQL literal, in the form the column's driver would send (JSON text for jsonb, ISO text for timestamps). */
function literal(column: PgColumn, value: unknown): string {
  const driverValue = column.mapToDriverValue(value);
  if (driverValue === null || driverValue === undefined) return "NULL";
  if (typeof driverValue === "boolean") return driverValue ? "TRUE" : "FALSE";
  if (typeof driverValue === "number" || typeof driverValue === "bigint") return String(driverValue);
  if (Buffer.isBuffer(driverValue)) return `'\\x${driverValue.toString("hex")}'`;
  const text = driverValue instanceof Date ? driverValue.toISOString() : typeof driverValue === "string" ? driverValue : JSON.stringify(driverValue);
  return `'${text.replaceAll("'", "''")}'`;
}

/** `name TYPE [PRIMARY KEY | NOT NULL] [UNIQUE] [DEFAULT x]`; `inlinePk` only for a single-column primary key. */
export function pgColumnDefinition(column: PgColumn, inlinePk: boolean): string {
  let sql = `${quote(column.name)} ${column.getSQLType()}`;
  if (inlinePk) sql += " PRIMARY KEY";
  if (column.notNull && !inlinePk) sql += " NOT NULL";
  if (column.isUnique && !inlinePk) sql += " UNIQUE";
  if (column.default !== undefined && !is(column.default, SQL)) sql += ` DEFAULT ${literal(column, column.default)}`;
  return sql;
}

/**
 * CREATE TABLE IF NOT EXISTS (with its composite primary key and unique constraints), then one
 * CREATE [UNIQUE] INDEX IF NOT EXISTS per index. Running them again changes nothing.
 *
 * @example
 * for (const statement of createPgTableStatements(pgInternalTables.smithersRuns)) await sql.unsafe(statement);
 */
export function createPgTableStatements(table: PgTable): string[] {
  const config = getTableConfig(table);
  const compositePk = config.primaryKeys[0]?.columns.map((c) => c.name);
  const parts = config.columns.map((c) => pgColumnDefinition(c, c.primary));
  if (compositePk) parts.push(`PRIMARY KEY (${compositePk.map(quote).join(", ")})`);
  for (const u of config.uniqueConstraints) parts.push(`UNIQUE (${u.columns.map((c) => quote(c.name)).join(", ")})`);
  const statements = [`CREATE TABLE IF NOT EXISTS ${quote(config.name)} (\n  ${parts.join(",\n  ")}\n)`];
  for (const idx of config.indexes) {
    // toPgTable builds indexes on plain columns only, so each entry has a name.
    const cols = idx.config.columns.map((c) => quote((c as { name: string }).name));
    const unique = idx.config.unique ? "UNIQUE " : "";
    statements.push(`CREATE ${unique}INDEX IF NOT EXISTS ${quote(idx.config.name!)} ON ${quote(config.name)} (${cols.join(", ")})`);
  }
  return statements;
}

/**
 * `ALTER TABLE … ADD COLUMN IF NOT EXISTS` for a column the table lacks. A NOT NULL column
 * without a default is added nullable, as on SQLite: the rows already there have no value for it.
 */
export function addPgColumnStatement(tableName: string, column: PgColumn): string {
  const def = pgColumnDefinition(column, false);
  const relaxed = column.notNull && column.default === undefined ? def.replace(" NOT NULL", "") : def;
  return `ALTER TABLE ${quote(tableName)} ADD COLUMN IF NOT EXISTS ${relaxed}`;
}
