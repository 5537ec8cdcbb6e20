/**
 * The output-table registry of one workflow: resolves an `output=` target (Zod schema by
 * reference, schema key, or custom Drizzle table) to its table, creates and forward-migrates
 * the tables, and reads/writes output rows.
 */
import type { Database } from "bun:sqlite";
import { is } from "drizzle-orm/entity";
import { getTableName } from "drizzle-orm/table";
import { getTableColumns } from "drizzle-orm/utils";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { SQLiteTable } from "drizzle-orm/sqlite-core/table";
import { getTableConfig } from "drizzle-orm/sqlite-core/utils";
import type { z } from "zod";
import { SmithersError } from "../errors/index.ts";
import { isZodSchema } from "../schema/index.ts";
import { addColumnStatement, createTableStatements, quoteIdentifier } from "./ddl.ts";
import { camelToSnake, fieldColumns, zodToInputTable, zodToTable, type FieldColumn } from "./output-schema.ts";
import type { Sql } from "./sql.ts";
import { combinable } from "./combined-rows.ts";

export type OutputSchema = z.ZodObject;

/** What a value passed where a schema belongs is, for an error message. */
function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object that is not a schema" : `${typeof value} ${JSON.stringify(value)}`;
}
/** What `output=` (and every ctx lookup) names: a Zod schema by reference, a schema key or table name, or a custom Drizzle table. */
export type OutputTarget = OutputSchema | string | SQLiteTable;

export type OutputTableInfo = {
  key: string;
  tableName: string;
  table: SQLiteTable;
  schema: OutputSchema | undefined;
  custom: boolean;
  payloadOnly: boolean;
  hasIteration: boolean;
};

export type OutputKey = { runId: string; nodeId: string; iteration: number };

export type MigrationReport = {
  created: string[];
  added: { table: string; column: string }[];
  /** Columns whose type differs from the schema: reported, never changed. */
  typeChanges: { table: string; column: string; expected: string; actual: string }[];
  /** Columns on disk the schema no longer has: kept, reported. */
  removed: { table: string; column: string }[];
};

type Col = SQLiteColumn & { name: string };

function columnsOf(table: SQLiteTable): Col[] {
  return getTableConfig(table).columns as Col[];
}

function inspectCustomTable(key: string, table: SQLiteTable, schema: OutputSchema | undefined): OutputTableInfo {
  const names = new Set(columnsOf(table).map((c) => c.name));
  const missing = ["run_id", "node_id"].filter((n) => !names.has(n));
  const tableName = getTableName(table);
  if (missing.length > 0) {
    throw new SmithersError(
      "CUSTOM_TABLE_INVALID",
      `Custom output table "${tableName}" lacks the bookkeeping column(s) ${missing.join(", ")}; add ${missing
        .map((m) => `${m} TEXT NOT NULL`)
        .join(" and ")} (and iteration INTEGER if the task runs in a loop)`,
      { table: tableName, missing },
    );
  }
  return { key, tableName, table, schema, custom: true, payloadOnly: false, hasIteration: names.has("iteration") };
}

export class OutputRegistry {
  readonly byKey = new Map<string, OutputTableInfo>();
  private readonly bySchema = new Map<unknown, OutputTableInfo>();
  private readonly byTable = new Map<SQLiteTable, OutputTableInfo>();
  readonly input: OutputTableInfo;

  constructor(schemas: Record<string, OutputSchema | SQLiteTable>) {
    let inputSchema: OutputSchema | undefined;
    if (typeof schemas !== "object" || schemas === null || Array.isArray(schemas)) {
      throw new SmithersError("INVALID_OPTION", `createSmithers takes an object of schemas ({ name: z.object(...) }); got ${describe(schemas)}`);
    }
    for (const [key, value] of Object.entries(schemas)) {
      if (!is(value, SQLiteTable) && !isZodSchema(value)) {
        throw new SmithersError("INVALID_OPTION", `Schema "${key}" must be a Zod schema or a Drizzle table; got ${describe(value)}`, { key });
      }
      if (key === "input" && !is(value, SQLiteTable)) {
        inputSchema = value as OutputSchema;
        continue;
      }
      const info = is(value, SQLiteTable) ? inspectCustomTable(key, value, undefined) : this.generated(key, value);
      this.add(info, value);
    }
    // Every input column is nullable: workflows sharing one database file share the input table.
    const inputColumns: FieldColumn[] = inputSchema
      ? fieldColumns("input", inputSchema).map((c) => ({ ...c, nullable: true }))
      : [{ field: "payload", column: "payload", kind: "json", nullable: true }];
    const inputTable = zodToInputTable(inputColumns);
    this.input = { key: "input", tableName: "input", table: inputTable, schema: inputSchema, custom: false, payloadOnly: !inputSchema, hasIteration: false };
  }

  /** Every output table, in the order they were added (one array until the next is added). */
  all(): readonly OutputTableInfo[] {
    return (this.list ??= [...this.byKey.values()]);
  }
  private list: readonly OutputTableInfo[] | undefined;

  /** The table behind an `output=` target; custom Drizzle tables are registered on first use. */
  resolve(target: OutputTarget, outputSchema?: OutputSchema): OutputTableInfo {
    if (typeof target === "string") {
      const info = this.byKey.get(target) ?? [...this.byKey.values()].find((i) => i.tableName === target);
      if (info) return info;
    } else {
      // A schema first: a Map lookup, where telling a Drizzle table apart walks its prototypes.
      const bySchema = this.bySchema.get(target);
      if (bySchema) return bySchema;
    }
    if (typeof target !== "string" && is(target, SQLiteTable)) {
      const known = this.byTable.get(target);
      if (known) return known;
      const info = inspectCustomTable(getTableName(target), target, outputSchema);
      this.add(info, target);
      return info;
    }
    const name = typeof target === "string" ? `"${target}"` : "this schema";
    throw new SmithersError(
      "OUTPUT_NOT_FOUND",
      `Output target ${name} is not one of this workflow's outputs (${[...this.byKey.keys()].join(", ") || "none"}); pass outputs.<key> from createSmithers`,
      { target: typeof target === "string" ? target : undefined },
    );
  }

  private generated(key: string, schema: OutputSchema): OutputTableInfo {
    const columns = fieldColumns(key, schema);
    const tableName = camelToSnake(key);
    if (tableName === "input") {
      throw new SmithersError("UNSUPPORTED_SCHEMA", `Output key "${key}" maps to table "input", which holds the run input; rename it`, { table: tableName });
    }
    const payloadOnly = columns.length === 1 && columns[0]!.field === "payload";
    return { key, tableName, table: zodToTable(tableName, columns), schema, custom: false, payloadOnly, hasIteration: true };
  }

  private add(info: OutputTableInfo, ref: unknown): void {
    for (const other of this.byKey.values()) {
      if (other.tableName === info.tableName) {
        throw new SmithersError("UNSUPPORTED_SCHEMA", `Schema keys "${other.key}" and "${info.key}" both map to table "${info.tableName}"`, {
          table: info.tableName,
        });
      }
    }
    this.byKey.set(info.key, info);
    this.list = undefined;
    this.byTable.set(info.table, info);
    if (!is(ref, SQLiteTable)) this.bySchema.set(ref, info);
  }
}

/** Creates missing tables and adds missing columns (forward only); reports what it did not change. */
export function migrateOutputTables(sqlite: Database, infos: readonly OutputTableInfo[]): MigrationReport {
  const report: MigrationReport = { created: [], added: [], typeChanges: [], removed: [] };
  const run = sqlite.transaction(() => {
    for (const info of infos) {
      const existing = sqlite.query<{ name: string; type: string }, [string]>("SELECT name, type FROM pragma_table_info(?)").all(info.tableName);
      if (existing.length === 0) {
        for (const sql of createTableStatements(info.table)) sqlite.exec(sql);
        report.created.push(info.tableName);
        continue;
      }
      if (info.custom) continue; // the author owns a custom table's migrations
      const onDisk = new Map(existing.map((c) => [c.name, c.type.toLowerCase()]));
      const wanted = columnsOf(info.table);
      for (const column of wanted) {
        const actual = onDisk.get(column.name);
        if (actual === undefined) {
          sqlite.exec(addColumnStatement(info.tableName, column));
          report.added.push({ table: info.tableName, column: column.name });
        } else if (actual !== column.getSQLType().toLowerCase()) {
          report.typeChanges.push({ table: info.tableName, column: column.name, expected: column.getSQLType(), actual });
        }
      }
      const wantedNames = new Set(wanted.map((c) => c.name));
      if (info.key === "input") continue; // other workflows' input columns are expected here
      for (const name of onDisk.keys()) {
        if (!wantedNames.has(name)) report.removed.push({ table: info.tableName, column: name });
      }
    }
  });
  run.immediate(); // take the write lock up front so concurrent openers wait instead of failing
  return report;
}

/**
 * How a table's rows are read: each field with its column, the key columns, and the SELECT of
 * every column in field order (the i-th as `c<i>`) by run_id, by run_id and node_id, and by the whole key (run_id,
 * node_id, and iteration where the table has it).
 */
type RowReader = {
  fields: readonly (readonly [field: string, column: SQLiteColumn])[];
  /** The result column each field is read from, by the field's place (`c0`, `c1`, …). */
  aliases: readonly string[];
  runId: SQLiteColumn;
  nodeId: SQLiteColumn | undefined;
  iteration: SQLiteColumn | undefined;
  byRun: string;
  byNode: string;
  byKey: string;
};
const rowReaders = new WeakMap<SQLiteTable, RowReader>();
function rowReader(table: SQLiteTable): RowReader {
  let found = rowReaders.get(table);
  if (!found) {
    const fields = Object.entries(getTableColumns(table)) as [string, SQLiteColumn][];
    const column = (name: string) => fields.find(([, c]) => c.name === name)?.[1];
    const iteration = column("iteration");
    // Each column under a short alias of its place: PostgreSQL cuts a result column's name to 63
    // bytes, so a long field name would not be found under its own name.
    const aliases = fields.map((_, i) => `c${i}`);
    const byRun = `SELECT ${fields.map(([, c], i) => `${quoteIdentifier(c.name)} AS ${aliases[i]}`).join(", ")} FROM ${quoteIdentifier(getTableName(table))} WHERE run_id = ?`;
    const byNode = `${byRun} AND node_id = ?`;
    found = {
      fields,
      aliases,
      runId: column("run_id")!,
      nodeId: column("node_id"),
      iteration,
      byRun,
      byNode,
      byKey: iteration ? `${byNode} AND iteration = ?` : byNode,
    };
    rowReaders.set(table, found);
  }
  return found;
}

/**
 * The SELECT of `table`'s rows whose run_id (and node_id, iteration, where given and the table has
 * the column) are `key`'s, with its parameters, each through its column's encoder as Drizzle's
 * `eq()` binds it. Plain SQL rather than Drizzle's query builder: a run reads its rows without
 * building (or loading) Drizzle's session.
 */
export function rowsQuery(table: SQLiteTable, key: Partial<OutputKey> & { runId: string }): { text: string; params: unknown[] } {
  const r = rowReader(table);
  const runId = r.runId.mapToDriverValue(key.runId);
  if (key.nodeId === undefined) return { text: r.byRun, params: [runId] };
  const nodeId = r.nodeId!.mapToDriverValue(key.nodeId);
  if (key.iteration === undefined || !r.iteration) return { text: r.byNode, params: [runId, nodeId] };
  return { text: r.byKey, params: [runId, nodeId, r.iteration.mapToDriverValue(key.iteration)] };
}

/** A row of rowsQuery as Drizzle's `select()` returns it: every field by its key, through its column's decoder, NULL as null. */
export function decodeRow(table: SQLiteTable, raw: Record<string, unknown>): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  const { fields, aliases } = rowReader(table);
  for (let i = 0; i < fields.length; i++) {
    const [field, column] = fields[i]!;
    const value = raw[aliases[i]!];
    row[field] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
  }
  return row;
}

/** Each table's fields with their SQL column names, listed once (a row is built per task attempt). */
const fieldLists = new WeakMap<OutputTableInfo, readonly { field: string; name: string }[]>();
function fieldsOf(info: OutputTableInfo): readonly { field: string; name: string }[] {
  let found = fieldLists.get(info);
  if (!found) fieldLists.set(info, (found = Object.entries(getTableColumns(info.table)).map(([field, column]) => ({ field, name: column.name }))));
  return found;
}

/**
 * The row `writeOutputRow` stores for `values`, by field name. In a generated table every column
 * is there, absent ones null, so a rewrite leaves nothing of the row before; a custom table gets
 * only the columns given, so its own defaults apply to the rest.
 */
export function outputRowFor(info: OutputTableInfo, key: OutputKey, values: Record<string, unknown>): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  for (const { field, name } of fieldsOf(info)) {
    if (name === "run_id") row[field] = key.runId;
    else if (name === "node_id") row[field] = key.nodeId;
    else if (name === "iteration") row[field] = key.iteration;
    else if (field in values) row[field] = values[field];
    else if (name in values) row[field] = values[name];
    else if (!info.custom) row[field] = null;
  }
  return row;
}

type OutputWrite = { remove: string | undefined; insert: string; encode: (row: Record<string, unknown>) => unknown[] };

const outputWrites = new WeakMap<OutputTableInfo, Map<string, OutputWrite>>();

/** The statements that write one table's rows with this set of fields, built once per table and field list. */
function outputWrite(info: OutputTableInfo, fields: readonly string[]): OutputWrite {
  let byFields = outputWrites.get(info);
  if (!byFields) outputWrites.set(info, (byFields = new Map()));
  const key = fields.join(",");
  let found = byFields.get(key);
  if (found) return found;
  const columns = getTableColumns(info.table);
  const names = fields.map((f) => quoteIdentifier(columns[f]!.name));
  const table = quoteIdentifier(info.tableName);
  const insert = `INSERT INTO ${table} (${names.join(", ")}) VALUES (${names.map(() => "?").join(", ")})`;
  // Each column's own encoder (JSON, boolean, timestamp) turns a value into what is stored; null
  // stays NULL. PostgreSQL's driver reads these the same way (see pg/driver.ts).
  const encoders = fields.map((f) => columns[f]!);
  const encode = (r: Record<string, unknown>) => {
    const params: unknown[] = new Array(encoders.length);
    for (let i = 0; i < encoders.length; i++) {
      const value = r[fields[i]!];
      params[i] = value === null || value === undefined ? null : encoders[i]!.mapToDriverValue(value);
    }
    return params;
  };
  if (info.custom) {
    const remove = `DELETE FROM ${table} WHERE run_id = ? AND node_id = ?${info.hasIteration ? " AND iteration = ?" : ""}`;
    found = { remove, insert, encode };
  } else {
    // A generated table's key is (run_id, node_id, iteration): one upsert replaces the row.
    const set = names.map((n) => `${n} = excluded.${n}`).join(", ");
    // Combinable: a step that settles many tasks writes their rows many per statement (see SqliteSql).
    found = { remove: undefined, insert: combinable(`${insert} ON CONFLICT (run_id, node_id, iteration) DO UPDATE SET ${set}`), encode };
  }
  byFields.set(key, found);
  return found;
}

const wholeRowWrites = new WeakMap<OutputTableInfo, OutputWrite>();
/** outputWrite of every field of a generated table, once per table. */
function wholeRowWrite(info: OutputTableInfo): OutputWrite {
  let found = wholeRowWrites.get(info);
  if (!found)
    wholeRowWrites.set(
      info,
      (found = outputWrite(
        info,
        fieldsOf(info).map((f) => f.field),
      )),
    );
  return found;
}

/**
 * Replaces the row at `key` with `values` (already validated) and returns the row as stored
 * (every column by field name, absent ones null). Call inside a transaction.
 */
export async function writeOutputRow(q: Sql, info: OutputTableInfo, key: OutputKey, values: Record<string, unknown>): Promise<Record<string, unknown>> {
  const row = outputRowFor(info, key, values);
  // A generated table's row has every field (outputRowFor): its statement is looked up without listing them.
  const statements = info.custom ? outputWrite(info, Object.keys(row)) : wholeRowWrite(info);
  if (statements.remove) {
    if (info.hasIteration) await q.run(statements.remove, key.runId, key.nodeId, key.iteration);
    else await q.run(statements.remove, key.runId, key.nodeId);
  }
  await q.run(statements.insert, ...statements.encode(row));
  if (info.custom) for (const { field } of fieldsOf(info)) row[field] ??= null;
  return row;
}

/** All output rows of a run in this table, as Drizzle maps them (booleans, JSON, dates decoded). */
export async function readOutputRows(q: Sql, info: OutputTableInfo, runId: string): Promise<Record<string, unknown>[]> {
  const { text, params } = rowsQuery(info.table, { runId });
  return (await q.all<Record<string, unknown>>(text, ...params)).map((raw) => decodeRow(info.table, raw));
}

/** The row at `key`, as Drizzle maps it, or undefined. */
export async function readOutputRow(q: Sql, info: OutputTableInfo, key: OutputKey): Promise<Record<string, unknown> | undefined> {
  const { text, params } = rowsQuery(info.table, key);
  const raw = await q.get<Record<string, unknown>>(text, ...params);
  return raw && decodeRow(info.table, raw);
}

/**
 * Inside the transaction that continues run `fromRunId` as `toRunId` (`<Loop continueAsNewEvery>`):
 * copies, for each node id, the row of its highest iteration, so the new run's ctx still reads the
 * latest output of every task (a loop's `until`, a task before the loop). A custom table's own
 * single-column primary key (say an autoincrement id) is left for the database to assign. Returns
 * the rows copied.
 */
export function copyLatestOutputRows(q: Sql, info: OutputTableInfo, fromRunId: string, toRunId: string): Promise<number> {
  const kept = columnsOf(info.table).filter((c) => c.name !== "run_id" && !(c.primary && c.name !== "node_id" && c.name !== "iteration"));
  const names = kept.map((c) => quoteIdentifier(c.name));
  const table = quoteIdentifier(info.tableName);
  const latest = info.hasIteration ? ` AND s.iteration = (SELECT MAX(m.iteration) FROM ${table} AS m WHERE m.run_id = s.run_id AND m.node_id = s.node_id)` : "";
  const text = `INSERT INTO ${table} (run_id, ${names.join(", ")}) SELECT ?, ${names.map((n) => `s.${n}`).join(", ")} FROM ${table} AS s WHERE s.run_id = ?${latest}`;
  return q.run(text, toRunId, fromRunId);
}
