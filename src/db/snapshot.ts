/**
 * The run snapshot that rebuilds ctx: the run input and every output row of the run, each
 * table's rows indexed under both its schema key and its SQLite table name.
 */
import type { SQLQueryBindings } from "bun:sqlite";
import { eq, getTableColumns } from "drizzle-orm";
import { getTableConfig, type SQLiteColumn } from "drizzle-orm/sqlite-core";
import { rawStatement } from "./adapters/shared.ts";
import { quoteIdentifier } from "./ddl.ts";
import { readOutputRows, type OutputRegistry } from "./output-tables.ts";
import type { Drizzle, SmithersDb } from "./smithers-db.ts";

export type OutputRow = Record<string, unknown> & { nodeId: string; iteration: number };
export type OutputSnapshot = Record<string, OutputRow[]>;

function runIdColumn(registry: OutputRegistry): SQLiteColumn {
  return getTableConfig(registry.input.table).columns.find((c) => c.name === "run_id")!;
}

export function writeInput(d: Drizzle, registry: OutputRegistry, runId: string, input: unknown): void {
  const values: Record<string, unknown> = { ...(registry.input.payloadOnly ? { payload: input } : (input as Record<string, unknown>)), runId };
  // Columns the input sets, each through its own encoder (JSON, boolean, timestamp); null stays NULL.
  const columns = Object.entries(getTableColumns(registry.input.table)).filter(([field]) => values[field] !== undefined);
  const names = columns.map(([, c]) => quoteIdentifier(c.name));
  const bindings = columns.map(([field, c]) => (values[field] === null ? null : c.mapToDriverValue(values[field])) as SQLQueryBindings);
  rawStatement(d, `INSERT INTO ${quoteIdentifier(registry.input.tableName)} (${names.join(", ")}) VALUES (${names.map(() => "?").join(", ")})`).run(...bindings);
}

/** The run input as the author passed it (validated), or undefined when the run has none stored. */
export function readInput(d: Drizzle, registry: OutputRegistry, runId: string): unknown {
  const row = d.select().from(registry.input.table).where(eq(runIdColumn(registry), runId)).get() as
    | Record<string, unknown>
    | undefined;
  if (!row) return undefined;
  if (registry.input.payloadOnly) return row.payload;
  const { runId: _omit, ...rest } = row;
  return rest;
}

export function loadInput(db: SmithersDb, registry: OutputRegistry, runId: string): Promise<unknown> {
  return db.read("loadInput", (d) => readInput(d, registry, runId));
}

/** A row as read from an output table, with `nodeId` and a numeric `iteration` (0 for tables without one). */
export function normalizeRow(row: Record<string, unknown>): OutputRow {
  const iteration = typeof row.iteration === "number" ? row.iteration : 0;
  return { ...row, nodeId: String(row.nodeId ?? row.node_id), iteration } as OutputRow;
}

/** The row as authors see it: without run_id, node_id and iteration. */
export function stripBookkeeping(row: OutputRow | undefined): Record<string, unknown> | undefined {
  if (!row) return undefined;
  const { runId: _r, nodeId: _n, iteration: _i, ...rest } = row;
  return rest;
}

export function readOutputs(d: Drizzle, registry: OutputRegistry, runId: string): OutputSnapshot {
  const snapshot: OutputSnapshot = {};
  for (const info of registry.all()) {
    const rows = readOutputRows(d, info, runId).map(normalizeRow);
    snapshot[info.key] = rows;
    snapshot[info.tableName] = rows;
  }
  return snapshot;
}

export function loadOutputs(db: SmithersDb, registry: OutputRegistry, runId: string): Promise<OutputSnapshot> {
  return db.read("loadOutputs", (d) => readOutputs(d, registry, runId));
}
