/**
 * Output and input tables for PostgreSQL. They are the SQLite tables (../output-schema.ts) passed
 * through toPgTable, so one Zod-to-column mapping serves both dialects; on PostgreSQL the kinds
 * become native types: text, bigint, double precision, boolean, timestamptz and jsonb.
 */
import type { PgTable } from "drizzle-orm/pg-core";
import { type FieldColumn, zodToInputTable, zodToTable } from "../output-schema.ts";
import { toPgTable } from "./tables.ts";

/**
 * The table of one output schema key: `run_id`, `node_id`, `iteration` and one column per field,
 * primary key (run_id, node_id, iteration).
 *
 * @example
 * const table = zodToPgTable("code_review", fieldColumns("codeReview", schema));
 */
export function zodToPgTable(tableName: string, columns: FieldColumn[]): PgTable {
  return toPgTable(zodToTable(tableName, columns));
}

/** The run-input table (`input`), keyed by run_id alone. */
export function zodToPgInputTable(columns: FieldColumn[]): PgTable {
  return toPgTable(zodToInputTable(columns));
}
