/**
 * What rebuilds ctx: the run input and the run's output rows, read whole (each table's rows under
 * both its schema key and its SQLite table name), as keys only, or one row at a time.
 */
import type { SQLQueryBindings } from "bun:sqlite";
import { getTableColumns } from "drizzle-orm/utils";
import { SmithersError } from "../errors/index.ts";
import { quoteIdentifier } from "./ddl.ts";
import { decodeRow, readOutputRows, rowsQuery, type OutputKey, type OutputRegistry, type OutputTableInfo } from "./output-tables.ts";
import { SqliteDb } from "./smithers-db.ts";
import type { Sql } from "./sql.ts";
import type { SmithersDb } from "./store.ts";

export type OutputRow = Record<string, unknown> & { nodeId: string; iteration: number };
export type OutputSnapshot = Record<string, OutputRow[]>;
/** Which rows a run has, without their values: by table key, each row's node id and iteration. */
export type OutputKeys = Record<string, { nodeId: string; iteration: number }[]>;

export async function writeInput(q: Sql, registry: OutputRegistry, runId: string, input: unknown): Promise<void> {
  const values: Record<string, unknown> = { ...(registry.input.payloadOnly ? { payload: input } : (input as Record<string, unknown>)), runId };
  // Columns the input sets, each through its own encoder (JSON, boolean, timestamp); null stays NULL.
  const columns = Object.entries(getTableColumns(registry.input.table)).filter(([field]) => values[field] !== undefined);
  const names = columns.map(([, c]) => quoteIdentifier(c.name));
  const bindings = columns.map(([field, c]) => (values[field] === null ? null : c.mapToDriverValue(values[field])));
  await q.run(`INSERT INTO ${quoteIdentifier(registry.input.tableName)} (${names.join(", ")}) VALUES (${names.map(() => "?").join(", ")})`, ...bindings);
}

/** The run input as the author passed it (validated), or undefined when the run has none stored. */
export async function readInput(q: Sql, registry: OutputRegistry, runId: string): Promise<unknown> {
  const { text, params } = rowsQuery(registry.input.table, { runId });
  const raw = await q.get<Record<string, unknown>>(text, ...params);
  if (!raw) return undefined;
  const row = decodeRow(registry.input.table, raw);
  if (registry.input.payloadOnly) return row.payload;
  const { runId: _omit, ...rest } = row;
  return rest;
}

/**
 * A run's stored input read without its workflow (for an operator): the `input` row's non-null
 * columns but run_id, keyed by field name (snake_case turned camelCase), JSON text decoded where it
 * parses as an object or array. Undefined when the run stored no input (or there is no input table).
 */
export function loadStoredInput(db: SmithersDb, runId: string): Promise<Record<string, unknown> | undefined> {
  return db.read("loadStoredInput", async (q) => {
    const table = await q.get(
      q.dialect === "postgres" ? "SELECT to_regclass('input') AS t" : "SELECT 1 AS t FROM sqlite_master WHERE type = 'table' AND name = 'input'",
    );
    if (!table || table.t === null) return undefined;
    const row = await q.get(`SELECT * FROM ${quoteIdentifier("input")} WHERE run_id = ?`, runId);
    if (!row) return undefined;
    const input: Record<string, unknown> = {};
    for (const [column, value] of Object.entries(row)) {
      if (column === "run_id" || value === null) continue;
      input[column.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase())] = decodeJsonText(value);
    }
    return input;
  });
}

/** Where a task's output row lives: its node, iteration and output table (as `_smithers_nodes` records them). */
export type StoredOutputKey = { nodeId: string; iteration: number; outputTable: string };

/**
 * Tasks' output rows read without their workflow (for an operator, like loadStoredInput): per
 * `nodeId#iteration`, the row's columns but run_id, node_id and iteration, keyed camelCase, JSON
 * text decoded. A task with no row (or whose table is gone) is absent from the map.
 */
export function loadStoredOutputs(db: SmithersDb, runId: string, keys: readonly StoredOutputKey[]): Promise<Map<string, Record<string, unknown>>> {
  return db.read("loadStoredOutputs", async (q) => {
    const found = new Map<string, Record<string, unknown>>();
    const wanted = new Set(keys.map((k) => `${k.nodeId}#${k.iteration}`));
    for (const table of new Set(keys.map((k) => k.outputTable))) {
      const exists = await q.get(
        q.dialect === "postgres" ? "SELECT to_regclass(?) AS t" : "SELECT 1 AS t FROM sqlite_master WHERE type = 'table' AND name = ?",
        q.dialect === "postgres" ? quoteIdentifier(table) : table,
      );
      if (!exists || exists.t === null) continue;
      for (const row of await q.all<Record<string, unknown>>(`SELECT * FROM ${quoteIdentifier(table)} WHERE run_id = ?`, runId)) {
        const key = `${String(row.node_id)}#${typeof row.iteration === "number" ? row.iteration : Number(row.iteration ?? 0)}`;
        if (!wanted.has(key)) continue;
        const out: Record<string, unknown> = {};
        for (const [column, value] of Object.entries(row)) {
          if (column === "run_id" || column === "node_id" || column === "iteration") continue;
          out[column.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase())] = decodeJsonText(value);
        }
        found.set(key, out);
      }
    }
    return found;
  });
}

function decodeJsonText(value: unknown): unknown {
  if (typeof value !== "string" || !/^\s*[[{]/.test(value)) return value;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

export function loadInput(db: SmithersDb, registry: OutputRegistry, runId: string): Promise<unknown> {
  return db.read("loadInput", (q) => readInput(q, registry, runId));
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

export async function readOutputs(q: Sql, registry: OutputRegistry, runId: string): Promise<OutputSnapshot> {
  const snapshot: OutputSnapshot = {};
  for (const info of registry.all()) {
    const rows = (await readOutputRows(q, info, runId)).map(normalizeRow);
    snapshot[info.key] = rows;
    snapshot[info.tableName] = rows;
  }
  return snapshot;
}

/** One table's rows of a run, as ctx reads them. */
export function loadOutputRows(db: SmithersDb, info: OutputTableInfo, runId: string): Promise<OutputRow[]> {
  return db.read("loadOutputRows", async (q) => (await readOutputRows(q, info, runId)).map(normalizeRow));
}

export function loadOutputs(db: SmithersDb, registry: OutputRegistry, runId: string): Promise<OutputSnapshot> {
  return db.read("loadOutputs", (q) => readOutputs(q, registry, runId));
}

/** The node id and iteration of every row of the run in this table (0 when it has no iteration column). */
export async function readOutputKeys(q: Sql, info: OutputTableInfo, runId: string): Promise<{ nodeId: string; iteration: number }[]> {
  const iteration = info.hasIteration ? "iteration" : "0";
  const query = `SELECT node_id AS "nodeId", ${iteration} AS iteration FROM ${quoteIdentifier(info.tableName)} WHERE run_id = ?`;
  return (await q.all<{ nodeId: unknown; iteration: unknown }>(query, runId)).map((r) => ({
    nodeId: String(r.nodeId),
    iteration: typeof r.iteration === "number" ? r.iteration : 0,
  }));
}

export function loadOutputKeys(db: SmithersDb, registry: OutputRegistry, runId: string): Promise<OutputKeys> {
  return db.read("loadOutputKeys", async (q) => {
    const keys: OutputKeys = {};
    for (const info of registry.all()) keys[info.key] = await readOutputKeys(q, info, runId);
    return keys;
  });
}

/**
 * One stored row, read synchronously (outside the queue): for ctx lookups during a render, which
 * is synchronous. SQLite only: a PostgreSQL run keeps its rows in memory instead (RunSetup). A run's output rows are written only by that run's own steps, which it awaits
 * before rendering, so this never sees a half-done write of the row it asks for; a WAL reader
 * does not wait for another process's writer. Prepared once per connection and table.
 */
export function readOutputRowNow(db: SmithersDb, info: OutputTableInfo, key: OutputKey): OutputRow | undefined {
  if (!(db instanceof SqliteDb)) throw new SmithersError("DB_SYNC_READ_UNSUPPORTED", `A ${db.dialect} database cannot be read synchronously`);
  const { text, params } = rowsQuery(info.table, key);
  const raw = db.sql.statement(text).get(...(params as SQLQueryBindings[])) as Record<string, unknown> | null;
  return raw ? normalizeRow(decodeRow(info.table, raw)) : undefined;
}

/**
 * Every row of a run in one output table, read synchronously (outside the queue, like
 * readOutputRowNow): what the test kit's `output()` reads between its awaits. SQLite only.
 */
export function readOutputRowsNow(db: SmithersDb, info: OutputTableInfo, runId: string): OutputRow[] {
  if (!(db instanceof SqliteDb)) throw new SmithersError("DB_SYNC_READ_UNSUPPORTED", `A ${db.dialect} database cannot be read synchronously`);
  const { text, params } = rowsQuery(info.table, { runId });
  const rows = db.sql.statement(text).all(...(params as SQLQueryBindings[])) as Record<string, unknown>[];
  return rows.map((raw) => normalizeRow(decodeRow(info.table, raw)));
}
