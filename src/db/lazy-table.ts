/**
 * The internal tables as Drizzle tables built when first read. Building the 21 tables at import
 * (their column definitions, then their columns) was ~3 ms of every process that loads the
 * engine, and most processes read few of them: a run's statements are texts made from the
 * columns' SQL names (adapters/shared.ts' sqlNames), which need no built column.
 *
 * The table is a real SQLiteTable from the start (its name, `is(table, SQLiteTable)`, its field
 * keys); the first read of a field or of Drizzle's column records builds it with Drizzle's own
 * sqliteTable and takes the result's properties over, its columns (and foreign keys) pointing at
 * this table, so every reader sees one table whatever it read first. The SQL names come from the
 * column definitions, made at once from src/; the bundle's build records them for every table
 * (SMITHERS_TABLE_COLUMNS), so there the definitions too are made when the table is built.
 */
import type { BuildColumns } from "drizzle-orm/column-builder";
import type { SQLiteColumnBuilderBase } from "drizzle-orm/sqlite-core/columns/common";
import { SQLiteTable, type SQLiteTableExtraConfigValue, type SQLiteTableWithColumns, sqliteTable } from "drizzle-orm/sqlite-core/table";

/** Drizzle's records on a table that hold its built columns (Symbol.for keys, stable across its modules). */
const BUILT_RECORDS = ["drizzle:Columns", "drizzle:ExtraConfigColumns", "drizzle:ExtraConfigBuilder", "drizzle:SQLiteInlineForeignKeys"].map((name) =>
  Symbol.for(name),
);

/**
 * Every internal table's field keys and their SQL names, as the bundle's build read them from the
 * definitions (a `define` of scripts/build-bundle.ts: JSON text); undeclared when run from src/.
 */
declare const SMITHERS_TABLE_COLUMNS: string | undefined;
const recordedColumns: Readonly<Record<string, Readonly<Record<string, string>>>> | undefined =
  typeof SMITHERS_TABLE_COLUMNS === "string" ? JSON.parse(SMITHERS_TABLE_COLUMNS) : undefined;

/** Each lazy table's SQL names by field key, without building it: what sqlNames reads. */
const namesOf = new WeakMap<object, Readonly<Record<string, string>>>();

/** The SQL name of each field of `table` when it is a lazy table (undefined otherwise), without building it. */
export function definedColumnNames(table: object): Readonly<Record<string, string>> | undefined {
  return namesOf.get(table);
}

/** The SQL names of `columns`' fields: a column defined without a name takes its field key, as Drizzle's setName gives it when it builds. */
export function columnNames(columns: Record<string, SQLiteColumnBuilderBase>): Record<string, string> {
  const names: Record<string, string> = {};
  for (const [key, builder] of Object.entries(columns)) {
    const { name } = (builder as unknown as { config: { name: string } }).config;
    names[key] = name === "" ? key : name;
  }
  return names;
}

type LazyTable<TName extends string, TColumns extends Record<string, SQLiteColumnBuilderBase>> = SQLiteTableWithColumns<{
  name: TName;
  schema: undefined;
  columns: BuildColumns<TName, TColumns, "sqlite">;
  dialect: "sqlite";
}>;

/**
 * `sqliteTable(name, columns(), extraConfig)` (its object-and-array form), its columns built on
 * first read (see the module's comment). `columns` makes the column definitions: from the bundle,
 * whose build recorded the fields and names (SMITHERS_TABLE_COLUMNS), when the table is built;
 * else at once, to read them.
 */
export function lazySqliteTable<TName extends string, TColumns extends Record<string, SQLiteColumnBuilderBase>>(
  name: TName,
  columns: () => TColumns,
  extraConfig?: (self: BuildColumns<TName, TColumns, "sqlite">) => SQLiteTableExtraConfigValue[],
): LazyTable<TName, TColumns> {
  return lazyTableOf(name, columns, extraConfig, recordedColumns?.[name]);
}

/** lazySqliteTable with the fields' SQL names given (`names`, the bundle's record) or read from the definitions. */
export function lazyTableOf<TName extends string, TColumns extends Record<string, SQLiteColumnBuilderBase>>(
  name: TName,
  columns: () => TColumns,
  extraConfig: ((self: BuildColumns<TName, TColumns, "sqlite">) => SQLiteTableExtraConfigValue[]) | undefined,
  names: Readonly<Record<string, string>> | undefined,
): LazyTable<TName, TColumns> {
  let definitions = names === undefined ? columns() : undefined;
  const fieldNames = names ?? columnNames(definitions!);
  const table = new SQLiteTable(name, undefined, name);
  const fields = table as unknown as Record<PropertyKey, unknown>;
  const keys: PropertyKey[] = [...Object.keys(fieldNames), ...BUILT_RECORDS];
  let built = false;
  const build = () => {
    if (built) return;
    definitions ??= columns();
    const made = sqliteTable(name, definitions, extraConfig) as unknown as Record<PropertyKey, unknown>;
    for (const key of new Set([...Reflect.ownKeys(made), ...keys])) {
      const enumerable = Object.getOwnPropertyDescriptor(made, key)?.enumerable ?? typeof key === "string";
      Object.defineProperty(table, key, { value: made[key], writable: true, enumerable, configurable: true });
    }
    // The columns and foreign keys Drizzle built name the table they were built for: this one now.
    for (const column of Object.values(made[BUILT_RECORDS[0]!] as Record<string, { table: unknown }>)) column.table = table;
    for (const foreignKey of made[BUILT_RECORDS[3]!] as { table: unknown }[]) foreignKey.table = table;
    built = true;
  };
  for (const key of keys) {
    Object.defineProperty(table, key, {
      enumerable: typeof key === "string",
      configurable: true,
      get() {
        build();
        return fields[key];
      },
      set(value: unknown) {
        build();
        fields[key] = value;
      },
    });
  }
  namesOf.set(table, fieldNames);
  return table as LazyTable<TName, TColumns>;
}
