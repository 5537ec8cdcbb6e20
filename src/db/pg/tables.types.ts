/**
 * The type of toPgTable's result: the SQLite table's columns, keys and data types, as pg-core
 * columns. Data types carry over unchanged because the mapping preserves them at run time
 * (bigint mode "number" reads a number, timestamptz mode "date" a Date, jsonb the parsed value).
 */
import type { Column, ColumnBaseConfig, ColumnDataType } from "drizzle-orm";
import type { PgColumn, PgTableWithColumns } from "drizzle-orm/pg-core";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";

type ConfigOf<C> = C extends Column<infer Config extends ColumnBaseConfig<ColumnDataType, string>> ? Config : never;

export type PgTwin<T extends SQLiteTable> = PgTableWithColumns<{
  name: T["_"]["name"];
  schema: undefined;
  dialect: "pg";
  columns: { [K in keyof T["_"]["columns"]]: PgColumn<ConfigOf<T["_"]["columns"][K]>> };
}>;
