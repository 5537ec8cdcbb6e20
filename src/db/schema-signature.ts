/**
 * The schema signature of an output table: SHA-256 of
 * `tableName|colA:type:notnull:pk|colB:…` with columns sorted by name, read from the live table
 * (PRAGMA table_info) so it changes whenever the table on disk does.
 */
import type { Database } from "bun:sqlite";
import { SmithersError } from "../errors/index.ts";
import { quoteIdentifier } from "./ddl.ts";

export type SignatureColumn = { name: string; type: string; notNull: boolean; primaryKey: boolean };

type TableInfoRow = { name: string; type: string; notnull: number; pk: number };

/** The text that is hashed; types are lower-cased, flags are 0/1, names sorted by code point. */
export function schemaSignatureText(tableName: string, columns: readonly SignatureColumn[]): string {
  const sorted = [...columns].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const parts = sorted.map((c) => `${c.name}:${c.type.toLowerCase()}:${c.notNull ? 1 : 0}:${c.primaryKey ? 1 : 0}`);
  return [tableName, ...parts].join("|");
}

export function hashSchemaSignature(tableName: string, columns: readonly SignatureColumn[]): string {
  return new Bun.CryptoHasher("sha256").update(schemaSignatureText(tableName, columns)).digest("hex");
}

/** Columns of a live table as SQLite reports them; empty when the table does not exist. */
export function liveColumns(sqlite: Database, tableName: string): SignatureColumn[] {
  const rows = sqlite.query(`PRAGMA table_info(${quoteIdentifier(tableName)})`).all() as TableInfoRow[];
  return rows.map((r) => ({ name: r.name, type: r.type, notNull: r.notnull !== 0, primaryKey: r.pk > 0 }));
}

/**
 * Signature of the table as it is on disk now.
 * @example
 * const sig = computeSchemaSignature(db.sqlite, "analysis");
 */
export function computeSchemaSignature(sqlite: Database, tableName: string): string {
  const columns = liveColumns(sqlite, tableName);
  if (columns.length === 0) {
    throw new SmithersError("OUTPUT_NOT_FOUND", `Cannot sign table "${tableName}": it does not exist`, {
      table: tableName,
    });
  }
  return hashSchemaSignature(tableName, columns);
}
