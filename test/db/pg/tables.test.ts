import { describe, expect, test } from "bun:test";
import { getTableColumns } from "drizzle-orm";
import { type PgTable, getTableConfig as pgConfig } from "drizzle-orm/pg-core";
import { blob, foreignKey, index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { getTableConfig as sqliteConfig } from "drizzle-orm/sqlite-core";
import { internalTables } from "../../../src/db/internal-schema.ts";
import { pgInternalTables, toPgTable } from "../../../src/db/pg/tables.ts";
import { SmithersError } from "../../../src/errors/index.ts";

const sample = sqliteTable(
  "sample",
  {
    runId: text("run_id").notNull(),
    seq: integer("seq").notNull().default(0),
    done: integer("done", { mode: "boolean" }).notNull().default(true),
    off: integer("off", { mode: "boolean" }).default(false),
    at: integer("at", { mode: "timestamp_ms" }),
    score: real("score"),
    payload: text("payload", { mode: "json" }),
    raw: blob("raw", { mode: "buffer" }),
    label: text("label").default("none"),
  },
  (t) => [primaryKey({ columns: [t.runId, t.seq] }), index("sample_label_idx").on(t.label, t.seq), uniqueIndex("sample_at_idx").on(t.runId, t.at)],
);

const types = (table: PgTable) => Object.fromEntries(pgConfig(table).columns.map((c) => [c.name, c.getSQLType()]));

describe("toPgTable", () => {
  test("maps each SQLite column type to its PostgreSQL type", () => {
    expect(types(toPgTable(sample))).toEqual({
      run_id: "text",
      seq: "bigint",
      done: "boolean",
      off: "boolean",
      at: "timestamp with time zone",
      score: "double precision",
      payload: "jsonb",
      raw: "bytea",
      label: "text",
    });
  });

  test("keeps the table name, the column keys and their SQL names", () => {
    const pg = toPgTable(sample);
    expect(pgConfig(pg).name).toBe("sample");
    const names = (cols: Record<string, { name: string }>) => Object.fromEntries(Object.entries(cols).map(([key, c]) => [key, c.name]));
    expect(names(getTableColumns(pg))).toEqual(names(getTableColumns(sample)));
  });

  test("keeps NOT NULL and literal defaults, booleans as true and false", () => {
    const cols = pgConfig(toPgTable(sample)).columns;
    const byName = Object.fromEntries(cols.map((c) => [c.name, { notNull: c.notNull, default: c.default }]));
    expect(byName.seq).toEqual({ notNull: true, default: 0 });
    expect(byName.done).toEqual({ notNull: true, default: true });
    expect(byName.off).toEqual({ notNull: false, default: false });
    expect(byName.label).toEqual({ notNull: false, default: "none" });
  });

  test("keeps the composite primary key and the indexes with their names and uniqueness", () => {
    const config = pgConfig(toPgTable(sample));
    expect(config.primaryKeys.map((pk) => pk.columns.map((c) => c.name))).toEqual([["run_id", "seq"]]);
    const indexes = config.indexes.map((i) => ({
      name: i.config.name,
      unique: i.config.unique,
      columns: i.config.columns.map((c) => (c as { name: string }).name),
    }));
    expect(indexes).toEqual([
      { name: "sample_label_idx", unique: false, columns: ["label", "seq"] },
      { name: "sample_at_idx", unique: true, columns: ["run_id", "at"] },
    ]);
  });

  test("refuses a table with a foreign key with UNSUPPORTED_SCHEMA", () => {
    const parent = sqliteTable("parent", { id: text("id").primaryKey() });
    const child = sqliteTable("child", { parentId: text("parent_id") }, (t) => [foreignKey({ columns: [t.parentId], foreignColumns: [parent.id] })]);
    let error: unknown;
    try {
      toPgTable(child);
    } catch (e) {
      error = e;
    }
    expect(SmithersError.is(error, "UNSUPPORTED_SCHEMA")).toBe(true);
  });
});

describe("pgInternalTables", () => {
  test("has exactly the internal tables, with the same names and columns, in the same order", () => {
    const shape = (config: { name: string; columns: { name: string }[] }) => ({ name: config.name, columns: config.columns.map((c) => c.name) });
    expect(Object.keys(pgInternalTables)).toEqual(Object.keys(internalTables));
    for (const [key, table] of Object.entries(internalTables)) {
      expect(shape(pgConfig(pgInternalTables[key as keyof typeof pgInternalTables]))).toEqual(shape(sqliteConfig(table)));
    }
  });

  test("has the same primary keys and index names as the internal tables", () => {
    for (const [key, table] of Object.entries(internalTables)) {
      const sqlite = sqliteConfig(table);
      const pg = pgConfig(pgInternalTables[key as keyof typeof pgInternalTables]);
      expect(pg.primaryKeys.map((pk) => pk.columns.map((c) => c.name))).toEqual(sqlite.primaryKeys.map((pk) => pk.columns.map((c) => c.name)));
      expect(pg.columns.filter((c) => c.primary).map((c) => c.name)).toEqual(sqlite.columns.filter((c) => c.primary).map((c) => c.name));
      expect(pg.indexes.map((i) => [i.config.name, i.config.unique])).toEqual(sqlite.indexes.map((i) => [i.config.name, i.config.unique]));
    }
  });
});

describe("PgTwin", () => {
  test("types the derived columns with the SQLite columns' keys and data types", () => {
    type RunRow = typeof pgInternalTables.smithersRuns.$inferSelect;
    type AttemptRow = typeof pgInternalTables.smithersAttempts.$inferSelect;
    // Compile-time assertions: tsc (npm run check) fails if the derived type loses a key or its data type.
    const row: Pick<RunRow, "runId" | "createdAtMs" | "parentRunId"> = { runId: "r", createdAtMs: 5, parentRunId: null };
    const cached: AttemptRow["cached"] = true;
    // @ts-expect-error created_at_ms is a number, not a string
    const wrong: RunRow["createdAtMs"] = "5";
    expect([row, cached, String(wrong)]).toEqual([{ runId: "r", createdAtMs: 5, parentRunId: null }, true, "5"]);
    expect(pgInternalTables.smithersRuns.createdAtMs.name).toBe("created_at_ms");
  });
});
