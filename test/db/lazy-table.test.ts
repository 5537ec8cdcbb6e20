import { describe, expect, test } from "bun:test";
import { is } from "drizzle-orm/entity";
import { eq } from "drizzle-orm/sql";
import { blob, index, integer, primaryKey, QueryBuilder, real, SQLiteTable, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { getTableName } from "drizzle-orm/table";
import { getTableColumns } from "drizzle-orm/utils";
import { sqlNames } from "../../src/db/adapters/shared.ts";
import { createTableStatements } from "../../src/db/ddl.ts";
import { internalTables } from "../../src/db/internal-schema.ts";
import { columnNames, definedColumnNames, lazySqliteTable, lazyTableOf } from "../../src/db/lazy-table.ts";

/** One definition of each kind of column and constraint the internal tables use, made afresh per call. */
const columns = () => ({
  runId: text("run_id").notNull(),
  nodeId: text("node_id").notNull(),
  iteration: integer("iteration").notNull().default(0),
  done: integer("done", { mode: "boolean" }).notNull().default(false),
  score: real("score"),
  body: blob("body"),
  state: text("state").notNull().default("pending"),
  unnamed: text(),
});
const extra = (t: { runId: unknown; nodeId: unknown; iteration: unknown; state: unknown }) => [
  primaryKey({ columns: [t.runId, t.nodeId, t.iteration] as never }),
  index("things_state_idx").on(t.state as never),
  uniqueIndex("things_node_idx").on(t.nodeId as never, t.state as never),
];
const eager = () => sqliteTable("things", columns(), extra as never);
const lazy = () => lazySqliteTable("things", columns, extra as never);

/** Whether `table`'s field `key` is still the getter that builds the columns. */
const unbuilt = (table: object, key: string) => typeof Object.getOwnPropertyDescriptor(table, key)?.get === "function";

describe("lazySqliteTable", () => {
  test("makes the table sqliteTable makes: its name, fields, DDL, query texts and column records", () => {
    const [a, b] = [eager(), lazy()];
    expect(is(b, SQLiteTable)).toBe(true);
    expect(getTableName(b)).toBe(getTableName(a));
    expect(Object.keys(b)).toEqual(Object.keys(a));
    expect(createTableStatements(b)).toEqual(createTableStatements(a));
    const qb = new QueryBuilder();
    expect(qb.select().from(b).where(eq(b.state, "done")).toSQL()).toEqual(qb.select().from(a).where(eq(a.state, "done")).toSQL());
    const built = getTableColumns(b);
    expect(Object.keys(built)).toEqual(Object.keys(getTableColumns(a)));
    for (const [key, column] of Object.entries(built)) {
      // The columns belong to the table handed out, as Drizzle's own do.
      expect(column.table).toBe(b);
      expect(b[key as keyof typeof b]).toBe(column as never);
    }
  });

  test("builds its columns on the first read of any of them, once", () => {
    const table = lazy();
    expect(unbuilt(table, "runId")).toBe(true);
    const column = table.nodeId;
    expect(unbuilt(table, "runId")).toBe(false);
    expect(table.nodeId).toBe(column);
    expect(getTableColumns(table).nodeId).toBe(column);
    // Drizzle's own records read first build it too.
    const other = lazy();
    expect(getTableColumns(other).runId).toBe(other.runId);
  });

  test("gives sqlNames the SQL names without building the columns: the built table's names", () => {
    const table = lazy();
    const names = sqlNames(table);
    expect(unbuilt(table, "runId")).toBe(true);
    expect(names).toEqual(sqlNames(eager()));
    expect(names.unnamed).toBe('"unnamed"');
  });
});

describe("lazyTableOf", () => {
  test("with the fields' SQL names given (the bundle's record), makes the column definitions only when the table is first read", () => {
    let made = 0;
    const definitions = () => {
      made++;
      return columns();
    };
    const table = lazyTableOf("things", definitions, extra as never, columnNames(columns()));
    expect(Object.keys(table)).toEqual(Object.keys(eager()));
    expect(sqlNames(table)).toEqual(sqlNames(eager()));
    expect(made).toBe(0);
    expect(createTableStatements(table)).toEqual(createTableStatements(eager()));
    expect(table.runId.table).toBe(table);
    expect(made).toBe(1);
  });
});

describe("the internal tables", () => {
  test("each one's column definitions name the columns Drizzle builds", () => {
    for (const table of Object.values(internalTables)) {
      const built = Object.fromEntries(Object.entries(getTableColumns(table)).map(([key, column]) => [key, column.name]));
      expect({ table: getTableName(table), names: definedColumnNames(table) }).toEqual({ table: getTableName(table), names: built });
    }
  });
});
