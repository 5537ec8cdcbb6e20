/**
 * DDL derived from Drizzle table definitions, so a table is written down once (as a
 * Drizzle `sqliteTable`) and its CREATE/ALTER statements are computed, never hand-kept.
 */
import { is } from "drizzle-orm/entity";
import { SQL } from "drizzle-orm/sql";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import { getTableConfig } from "drizzle-orm/sqlite-core/utils";

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;

function literal(value: unknown): string {
  if (value === null || value === undefined) return "NULL";
  if (typeof value === "boolean") return value ? "1" : "0";
  if (typeof value === "number" || typeof value === "bigint") return String(value);
  const text = value instanceof Date ? String(value.getTime()) : typeof value === "string" ? value : JSON.stringify(value);
  return `'${text.replaceAll("'", "''")}'`;
}

/** `name TYPE [NOT NULL] [DEFAULT x]`; `inlinePk` only for a single-column primary key. */
export function columnDefinition(column: SQLiteColumn, inlinePk: boolean): string {
  let sql = `${quote(column.name)} ${column.getSQLType()}`;
  if (inlinePk) sql += " PRIMARY KEY";
  if (column.notNull && !inlinePk) sql += " NOT NULL";
  if (column.isUnique && !inlinePk) sql += " UNIQUE";
  if (column.default !== undefined && !is(column.default, SQL)) {
    sql += ` DEFAULT ${literal(column.default)}`;
  }
  return sql;
}

/** CREATE TABLE IF NOT EXISTS plus its CREATE INDEX IF NOT EXISTS statements. */
export function createTableStatements(table: SQLiteTable): string[] {
  const config = getTableConfig(table);
  const compositePk = config.primaryKeys[0]?.columns.map((c) => c.name);
  const parts = config.columns.map((c) => columnDefinition(c, c.primary));
  if (compositePk) parts.push(`PRIMARY KEY (${compositePk.map(quote).join(", ")})`);
  for (const u of config.uniqueConstraints) parts.push(`UNIQUE (${u.columns.map((c) => quote(c.name)).join(", ")})`);
  for (const fk of config.foreignKeys) {
    const ref = fk.reference();
    let clause = `FOREIGN KEY (${ref.columns.map((c) => quote(c.name)).join(", ")}) REFERENCES ${quote(getTableConfig(ref.foreignTable).name)} (${ref.foreignColumns.map((c) => quote(c.name)).join(", ")})`;
    if (fk.onDelete) clause += ` ON DELETE ${fk.onDelete.toUpperCase()}`;
    if (fk.onUpdate) clause += ` ON UPDATE ${fk.onUpdate.toUpperCase()}`;
    parts.push(clause);
  }
  // A composite key is the table's natural order (run, node, iteration …): storing rows in that
  // B-tree (WITHOUT ROWID) saves the separate key index, so every write touches one tree fewer.
  const layout = compositePk ? " WITHOUT ROWID" : "";
  const statements = [`CREATE TABLE IF NOT EXISTS ${quote(config.name)} (\n  ${parts.join(",\n  ")}\n)${layout}`];
  for (const idx of config.indexes) {
    const cols = idx.config.columns.map((c) => quote((c as SQLiteColumn).name));
    const unique = idx.config.unique ? "UNIQUE " : "";
    statements.push(`CREATE ${unique}INDEX IF NOT EXISTS ${quote(idx.config.name)} ON ${quote(config.name)} (${cols.join(", ")})`);
  }
  return statements;
}

/**
 * `ALTER TABLE … ADD COLUMN` for a column the table lacks. SQLite refuses NOT NULL without a
 * default on ADD COLUMN (existing rows would violate it), so such a column is added nullable.
 */
export function addColumnStatement(tableName: string, column: SQLiteColumn): string {
  const def = columnDefinition(column, false);
  const relaxed = column.notNull && column.default === undefined ? def.replace(" NOT NULL", "") : def;
  return `ALTER TABLE ${quote(tableName)} ADD COLUMN ${relaxed}`;
}

export { quote as quoteIdentifier };
