/**
 * The internal tables as Drizzle tables whose columns are built when first read. Building the
 * 21 tables' columns at import was ~1.5 ms of every process that loads the engine, and most
 * processes read few of them: a run's statements are texts made from the columns' SQL names
 * (adapters/shared.ts' sqlNames), which the column definitions give without building anything.
 *
 * The table is a real SQLiteTable from the start (its name, `is(table, SQLiteTable)`, its field
 * keys); the first read of a field or of Drizzle's column records builds it with Drizzle's own
 * sqliteTable and takes the result's properties over, its columns (and foreign keys) pointing at
 * this table, so every reader sees one table whatever it read first.
 */
import type { BuildColumns } from "drizzle-orm/column-builder";
import type { SQLiteColumnBuilderBase } from "drizzle-orm/sqlite-core/columns/common";
import { SQLiteTable, type SQLiteTableExtraConfigValue, type SQLiteTableWithColumns, sqliteTable } from "drizzle-orm/sqlite-core/table";

/** Drizzle's records on a table that hold its built columns (Symbol.for keys, stable across its modules). */
const BUILT_RECORDS = ["drizzle:Columns", "drizzle:ExtraConfigColumns", "drizzle:ExtraConfigBuilder", "drizzle:SQLiteInlineForeignKeys"].map((name) =>
  Symbol.for(name),
);

/** Each lazy table's column definitions, by field key: where sqlNames reads SQL names without building. */
const definitions = new WeakMap<object, Record<string, SQLiteColumnBuilderBase>>();

/** The SQL name of each field of `table` when it is a lazy table (undefined otherwise), without building it. */
export function definedColumnNames(table: object): Record<string, string> | undefined {
  const columns = definitions.get(table);
  if (!columns) return undefined;
  const names: Record<string, string> = {};
  for (const [key, builder] of Object.entries(columns)) {
    // A column defined without a name takes its field key (Drizzle's setName does the same when it builds).
    const { name } = (builder as unknown as { config: { name: string } }).config;
    names[key] = name === "" ? key : name;
  }
  return names;
}

/** `sqliteTable(name, columns, extraConfig)` (its object-and-array form), its columns built on first read (see the module's comment). */
export function lazySqliteTable<TName extends string, TColumns extends Record<string, SQLiteColumnBuilderBase>>(
  name: TName,
  columns: TColumns,
  extraConfig?: (self: BuildColumns<TName, TColumns, "sqlite">) => SQLiteTableExtraConfigValue[],
): SQLiteTableWithColumns<{ name: TName; schema: undefined; columns: BuildColumns<TName, TColumns, "sqlite">; dialect: "sqlite" }> {
  const table = new SQLiteTable(name, undefined, name);
  const fields = table as unknown as Record<PropertyKey, unknown>;
  const keys: PropertyKey[] = [...Object.keys(columns), ...BUILT_RECORDS];
  let built = false;
  const build = () => {
    if (built) return;
    built = true;
    const made = sqliteTable(name, columns, extraConfig) as unknown as Record<PropertyKey, unknown>;
    for (const key of new Set([...Reflect.ownKeys(made), ...keys])) {
      const enumerable = Object.getOwnPropertyDescriptor(made, key)?.enumerable ?? typeof key === "string";
      Object.defineProperty(table, key, { value: made[key], writable: true, enumerable, configurable: true });
    }
    // The columns and foreign keys Drizzle built name the table they were built for: this one now.
    for (const column of Object.values(made[BUILT_RECORDS[0]!] as Record<string, { table: unknown }>)) column.table = table;
    for (const foreignKey of made[BUILT_RECORDS[3]!] as { table: unknown }[]) foreignKey.table = table;
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
  definitions.set(table, columns);
  return table as SQLiteTableWithColumns<{ name: TName; schema: undefined; columns: BuildColumns<TName, TColumns, "sqlite">; dialect: "sqlite" }>;
}
