/**
 * The schema signature of an output table: SHA-256 of
 * `tableName|colA:type:notnull:pk|colB:…` with columns sorted by name, read from the live table
 * (PRAGMA table_info, pg_attribute) so it changes whenever the table on disk does.
 */
import { sha256Hex } from "../json/index.ts";
import { SmithersError } from "../errors/index.ts";
import { quoteIdentifier } from "./ddl.ts";
import type { Sql } from "./sql.ts";

export type SignatureColumn = { name: string; type: string; notNull: boolean; primaryKey: boolean };

type TableInfoRow = { name: string; type: string; notnull: number; pk: number };

/** The text that is hashed; types are lower-cased, flags are 0/1, names sorted by code point. */
export function schemaSignatureText(tableName: string, columns: readonly SignatureColumn[]): string {
  const sorted = [...columns].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const parts = sorted.map((c) => `${c.name}:${c.type.toLowerCase()}:${c.notNull ? 1 : 0}:${c.primaryKey ? 1 : 0}`);
  return [tableName, ...parts].join("|");
}

export function hashSchemaSignature(tableName: string, columns: readonly SignatureColumn[]): string {
  return sha256Hex(schemaSignatureText(tableName, columns));
}

const PG_COLUMNS = `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS "notNull",
    coalesce(a.attnum = ANY (i.indkey), false) AS "primaryKey"
  FROM pg_attribute a
  LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND i.indisprimary
  WHERE a.attrelid = to_regclass(?) AND a.attnum > 0 AND NOT a.attisdropped
  ORDER BY a.attnum`;

/** Columns of a live table as the database reports them; empty when the table does not exist. */
export async function liveColumns(q: Sql, tableName: string): Promise<SignatureColumn[]> {
  if (q.dialect === "postgres") {
    const rows = await q.all<{ name: string; type: string; notNull: boolean; primaryKey: boolean }>(PG_COLUMNS, quoteIdentifier(tableName));
    return rows.map((r) => ({ name: r.name, type: r.type, notNull: r.notNull, primaryKey: r.primaryKey }));
  }
  const rows = await q.all<TableInfoRow>(`PRAGMA table_info(${quoteIdentifier(tableName)})`);
  return rows.map((r) => ({ name: r.name, type: r.type, notNull: r.notnull !== 0, primaryKey: r.pk > 0 }));
}

/**
 * Signature of the table as it is on disk now.
 * @example
 * const sig = await computeSchemaSignature(db.sql, "analysis");
 */
export async function computeSchemaSignature(q: Sql, tableName: string): Promise<string> {
  const columns = await liveColumns(q, tableName);
  if (columns.length === 0) {
    throw new SmithersError("OUTPUT_NOT_FOUND", `Cannot sign table "${tableName}": it does not exist`, {
      table: tableName,
    });
  }
  return hashSchemaSignature(tableName, columns);
}
