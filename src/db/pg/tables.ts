/**
 * PostgreSQL tables derived from the SQLite ones, so each table is still written down once (as a
 * Drizzle `sqliteTable` in internal-schema.ts or from a Zod schema) and both dialects follow it.
 * The mapping is column type by column type; it keeps names, keys, defaults and indexes.
 */
import { is } from "drizzle-orm/entity";
import { SQL } from "drizzle-orm/sql";
import { getTableColumns } from "drizzle-orm/utils";
import {
  bigint,
  boolean,
  customType,
  type ExtraConfigColumn,
  doublePrecision,
  index,
  jsonb,
  numeric,
  type PgColumn,
  type PgColumnBuilderBase,
  pgTable,
  primaryKey,
  text,
  timestamp,
  unique,
  uniqueIndex,
} from "drizzle-orm/pg-core";
import { getTableConfig, type SQLiteColumn, type SQLiteTable } from "drizzle-orm/sqlite-core";
import { SmithersError } from "../../errors/index.ts";
import { internalTables } from "../internal-schema.ts";
import type { PgTwin } from "./tables.types.ts";

export type { PgTwin } from "./tables.types.ts";

/** pg-core 0.45 has no bytea builder; a Buffer in, a Buffer out, as the SQLite blob column gives. */
const bytea = customType<{ data: Buffer; driverData: Buffer }>({ dataType: () => "bytea" });

/** A column builder with the chain methods every pg-core builder has (their generic types differ per column type). */
type Builder = PgColumnBuilderBase & {
  notNull(): Builder;
  default(value: unknown): Builder;
  primaryKey(): Builder;
  unique(name?: string): Builder;
  $defaultFn(fn: () => unknown): Builder;
  $onUpdateFn(fn: () => unknown): Builder;
};

function unsupported(table: string, column: string, what: string): never {
  throw new SmithersError("UNSUPPORTED_SCHEMA", `Table "${table}" column "${column}" has ${what}, which has no PostgreSQL mapping`, { table, column });
}

/** The pg-core builder of the same name for one SQLite column type. */
function pgType(tableName: string, column: SQLiteColumn): Builder {
  const name = column.name;
  const make = (): PgColumnBuilderBase => {
    switch (column.columnType) {
      case "SQLiteText":
        return text(name);
      case "SQLiteTextJson":
      case "SQLiteBlobJson":
        return jsonb(name);
      case "SQLiteInteger":
        return bigint(name, { mode: "number" });
      case "SQLiteBoolean":
        return boolean(name);
      case "SQLiteTimestamp": // mode timestamp (seconds) or timestamp_ms: either way a Date in JS
        return timestamp(name, { withTimezone: true, mode: "date" });
      case "SQLiteReal":
        return doublePrecision(name);
      case "SQLiteNumeric":
      case "SQLiteNumericNumber":
      case "SQLiteNumericBigInt":
        return numeric(name);
      case "SQLiteBlobBuffer":
        return bytea(name);
      case "SQLiteBigInt": // a blob holding a JS bigint
        return bigint(name, { mode: "bigint" });
      default:
        return unsupported(tableName, name, `type ${column.columnType}`);
    }
  };
  return make() as Builder;
}

function toPgColumn(tableName: string, column: SQLiteColumn, singlePk: boolean): Builder {
  let builder = pgType(tableName, column);
  if (column.notNull && !singlePk) builder = builder.notNull();
  if (singlePk) builder = builder.primaryKey();
  // An SQL default is written in SQLite's dialect; like the SQLite DDL, only literal defaults carry over.
  if (column.default !== undefined && !is(column.default, SQL)) builder = builder.default(column.default);
  if (column.defaultFn) builder = builder.$defaultFn(column.defaultFn);
  if (column.onUpdateFn) builder = builder.$onUpdateFn(column.onUpdateFn);
  if (column.isUnique && !singlePk) builder = builder.unique(column.uniqueName);
  return builder;
}

/**
 * The PostgreSQL twin of an SQLite table: same table name, column keys and SQL names, NOT NULL,
 * literal defaults, primary key, unique constraints and indexes. Types map integer → bigint,
 * integer boolean → boolean, integer timestamp → timestamptz, real → double precision,
 * text → text, text json → jsonb, blob → bytea. Throws UNSUPPORTED_SCHEMA for what has no twin
 * (custom columns, foreign keys, expression or partial indexes).
 *
 * @example
 * const pgRuns = toPgTable(smithersRuns);
 * createPgTableStatements(pgRuns); // CREATE TABLE IF NOT EXISTS "_smithers_runs" (…)
 */
export function toPgTable<T extends SQLiteTable>(table: T): PgTwin<T> {
  const config = getTableConfig(table);
  if (config.foreignKeys.length > 0) unsupported(config.name, config.foreignKeys[0]!.getName(), "a foreign key");
  const byName = new Map<string, string>(); // SQL name -> column key
  const shape: Record<string, Builder> = {};
  for (const [key, column] of Object.entries(getTableColumns(table) as Record<string, SQLiteColumn>)) {
    byName.set(column.name, key);
    shape[key] = toPgColumn(config.name, column, column.primary);
  }
  const keyOf = (column: unknown, what: string): string => {
    const key = is(column, SQL) ? undefined : byName.get((column as SQLiteColumn).name);
    return key ?? unsupported(config.name, what, "an expression in its key or index");
  };
  const pg = pgTable(config.name, shape, (t) => {
    // Drizzle wants a non-empty tuple of columns; every list here comes from a table that had one.
    const cols = <C>(list: unknown[], what: string) => list.map((c) => t[keyOf(c, what)]!) as unknown as [C, ...C[]];
    return [
      ...config.primaryKeys.map((pk) => primaryKey({ columns: cols<PgColumn>(pk.columns, pk.getName()) })),
      ...config.uniqueConstraints.map((u) => unique(u.name).on(...cols<PgColumn>(u.columns, u.name ?? "unique"))),
      ...config.indexes.map(({ config: { name, unique: isUnique, columns, where } }) => {
        if (where) unsupported(config.name, name, "a partial index");
        return (isUnique ? uniqueIndex(name) : index(name)).on(...cols<ExtraConfigColumn>(columns, name));
      }),
    ];
  });
  // Built from runtime column lists, so TypeScript cannot see the shape; PgTwin states it.
  return pg as unknown as PgTwin<T>;
}

/** The `_smithers_*` tables for PostgreSQL, derived from `internalTables` (same keys, same order). */
export const pgInternalTables = Object.fromEntries(Object.entries(internalTables).map(([key, table]) => [key, toPgTable(table)])) as {
  [K in keyof typeof internalTables]: PgTwin<(typeof internalTables)[K]>;
};
