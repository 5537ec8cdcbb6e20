import { Database } from "bun:sqlite";
import { afterEach, describe, expect, test } from "bun:test";
import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { z } from "zod";
import { openSmithersDb, type SqliteDb } from "../../src/db/index.ts";
import { migrateOutputTables, OutputRegistry, readOutputRow, readOutputRows, writeOutputRow } from "../../src/db/output-tables.ts";
import { errorOf, sqliteOf } from "../helpers.ts";

type ColumnInfo = { name: string; type: string; notnull: number; pk: number };
const tableInfo = (db: Database, table: string) => db.query<ColumnInfo, [string]>('SELECT name, type, "notnull", pk FROM pragma_table_info(?)').all(table);
const tableNames = (db: Database) =>
  db
    .query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_smithers%' ESCAPE '\\' ORDER BY name")
    .all()
    .map((r) => r.name);

const analysis = z.object({ summary: z.string(), severity: z.enum(["low", "medium", "high"]) });
const codeReview = z.object({
  approved: z.boolean(),
  score: z.number().int(),
  ratio: z.number().optional(),
  tags: z.array(z.string()),
  detail: z.object({ file: z.string(), line: z.number() }).nullable(),
});
const blob = z.object({ payload: z.unknown() });

const customTable = sqliteTable("audit_log", {
  runId: text("run_id").notNull(),
  nodeId: text("node_id").notNull(),
  iteration: integer("iteration").notNull().default(0),
  message: text("message").notNull(),
});

const opened: SqliteDb[] = [];
function memoryDb(): SqliteDb {
  const sdb = sqliteOf(openSmithersDb(":memory:"));
  opened.push(sdb);
  return sdb;
}
afterEach(async () => {
  for (const sdb of opened.splice(0)) await sdb.close();
});

describe("OutputRegistry", () => {
  test("names each generated table after its schema key in snake_case", () => {
    const registry = new OutputRegistry({ analysis, codeReview });
    expect(registry.all().map((i) => [i.key, i.tableName, i.custom])).toEqual([
      ["analysis", "analysis", false],
      ["codeReview", "code_review", false],
    ]);
  });

  test("marks a schema whose only field is payload as payload-only", () => {
    const registry = new OutputRegistry({ blob, analysis, notOnly: z.object({ payload: z.string(), extra: z.string() }) });
    expect(registry.resolve("blob").payloadOnly).toBe(true);
    expect(registry.resolve("analysis").payloadOnly).toBe(false);
    expect(registry.resolve("notOnly").payloadOnly).toBe(false);
  });

  test("resolves a target by schema reference, by key and by table name to the same table", () => {
    const registry = new OutputRegistry({ analysis, codeReview });
    const bySchema = registry.resolve(codeReview);
    expect(bySchema.key).toBe("codeReview");
    expect(registry.resolve("codeReview")).toBe(bySchema);
    expect(registry.resolve("code_review")).toBe(bySchema);
    expect(registry.resolve(bySchema.table)).toBe(bySchema);
  });

  test("an unknown key throws OUTPUT_NOT_FOUND naming it and the known outputs", () => {
    const registry = new OutputRegistry({ analysis, codeReview });
    const error = errorOf(() => registry.resolve("nope"));
    expect(error.code).toBe("OUTPUT_NOT_FOUND");
    expect(error.message).toContain("nope");
    expect(error.message).toContain("codeReview");
  });

  test("a value that is not a schema (a number, a string, null) throws INVALID_OPTION naming its key", () => {
    for (const value of [5, "x", null]) {
      const error = errorOf(() => new OutputRegistry({ analysis, out: value as never }));
      expect(error.code).toBe("INVALID_OPTION");
      expect(error.message).toContain('"out"');
    }
    expect(errorOf(() => new OutputRegistry(null as never)).code).toBe("INVALID_OPTION");
  });

  test("a schema that was not registered throws OUTPUT_NOT_FOUND, even if it has the same shape", () => {
    const registry = new OutputRegistry({ analysis });
    const lookalike = z.object({ summary: z.string(), severity: z.enum(["low", "medium", "high"]) });
    expect(errorOf(() => registry.resolve(lookalike)).code).toBe("OUTPUT_NOT_FOUND");
  });

  test("accepts a custom Drizzle table with run_id and node_id", () => {
    const registry = new OutputRegistry({ audit: customTable });
    const info = registry.resolve("audit");
    expect(info).toMatchObject({ key: "audit", tableName: "audit_log", custom: true, payloadOnly: false, hasIteration: true });
    expect(info.table).toBe(customTable);
    expect(registry.resolve(customTable)).toBe(info);
    expect(registry.resolve("audit_log")).toBe(info);
  });

  test("a custom table without iteration is accepted and marked as such", () => {
    const t = sqliteTable("flat", { runId: text("run_id").notNull(), nodeId: text("node_id").notNull(), v: text("v") });
    expect(new OutputRegistry({ flat: t }).resolve("flat").hasIteration).toBe(false);
  });

  test("a custom table missing run_id and node_id throws CUSTOM_TABLE_INVALID naming both columns", () => {
    const bad = sqliteTable("bad_table", { id: text("id").primaryKey(), message: text("message") });
    const error = errorOf(() => new OutputRegistry({ bad }));
    expect(error.code).toBe("CUSTOM_TABLE_INVALID");
    expect(error.message).toContain("bad_table");
    expect(error.message).toContain("run_id");
    expect(error.message).toContain("node_id");
    expect(error.details).toMatchObject({ missing: ["run_id", "node_id"] });
  });

  test("a custom table missing only node_id names only node_id", () => {
    const bad = sqliteTable("half", { runId: text("run_id").notNull(), message: text("message") });
    const error = errorOf(() => new OutputRegistry({ half: bad }));
    expect(error.code).toBe("CUSTOM_TABLE_INVALID");
    expect(error.message).toContain("node_id");
    expect(error.message).not.toContain("run_id TEXT");
    expect(error.details).toMatchObject({ missing: ["node_id"] });
  });

  test("an unregistered custom table passed to resolve is validated and registered on first use", () => {
    const registry = new OutputRegistry({ analysis });
    const info = registry.resolve(customTable);
    expect(info.custom).toBe(true);
    expect(registry.resolve("audit_log")).toBe(info);
    const bad = sqliteTable("late_bad", { id: text("id") });
    expect(errorOf(() => registry.resolve(bad)).code).toBe("CUSTOM_TABLE_INVALID");
  });

  test("a schema with an unmappable field throws UNSUPPORTED_SCHEMA naming the field", () => {
    const error = errorOf(() => new OutputRegistry({ broken: z.object({ big: z.bigint() }) }));
    expect(error.code).toBe("UNSUPPORTED_SCHEMA");
    expect(error.message).toContain("big");
  });

  test("two keys mapping to the same table name throw UNSUPPORTED_SCHEMA", () => {
    const error = errorOf(() => new OutputRegistry({ codeReview, code_review: analysis }));
    expect(error.code).toBe("UNSUPPORTED_SCHEMA");
    expect(error.message).toContain("code_review");
  });

  test("the input key becomes the run-input table keyed by run_id, not an output", () => {
    const registry = new OutputRegistry({ input: z.object({ topic: z.string() }), analysis });
    expect(registry.all().map((i) => i.key)).toEqual(["analysis"]);
    expect(registry.input).toMatchObject({ tableName: "input", payloadOnly: false, hasIteration: false });
  });

  test("without an input schema the run input is stored as a payload", () => {
    expect(new OutputRegistry({ analysis }).input.payloadOnly).toBe(true);
  });

  test("an output key that maps to the run-input table name is rejected", () => {
    const error = errorOf(() => new OutputRegistry({ Input: analysis }));
    expect(error.code).toBe("UNSUPPORTED_SCHEMA");
  });
});

describe("migrateOutputTables", () => {
  test("creates every table with run_id, node_id, iteration and the primary key (run_id, node_id, iteration)", () => {
    const db = new Database(":memory:");
    const registry = new OutputRegistry({ analysis, codeReview });
    const report = migrateOutputTables(db, registry.all());
    expect(report).toEqual({ created: ["analysis", "code_review"], added: [], typeChanges: [], removed: [] });
    expect(tableNames(db)).toEqual(["analysis", "code_review"]);
    expect(tableInfo(db, "code_review").map((c) => [c.name, c.type.toLowerCase(), c.notnull, c.pk])).toEqual([
      ["run_id", "text", 1, 1],
      ["node_id", "text", 1, 2],
      ["iteration", "integer", 1, 3],
      ["approved", "integer", 1, 0],
      ["score", "integer", 1, 0],
      ["ratio", "real", 0, 0],
      ["tags", "text", 1, 0],
      ["detail", "text", 0, 0],
    ]);
    const ddl = db.query<{ sql: string }, []>("SELECT sql FROM sqlite_master WHERE name = 'code_review'").get()!.sql;
    expect(ddl).toContain('PRIMARY KEY ("run_id", "node_id", "iteration")');
  });

  test("creates the run-input table keyed by run_id when given", () => {
    const db = new Database(":memory:");
    const registry = new OutputRegistry({ input: z.object({ topic: z.string() }), analysis });
    migrateOutputTables(db, [registry.input, ...registry.all()]);
    expect(tableInfo(db, "input").map((c) => [c.name, c.pk])).toEqual([
      ["run_id", 1],
      ["topic", 0],
    ]);
  });

  test("is a no-op the second time for an unchanged schema", () => {
    const db = new Database(":memory:");
    const registry = new OutputRegistry({ analysis, codeReview });
    migrateOutputTables(db, registry.all());
    expect(migrateOutputTables(db, registry.all())).toEqual({ created: [], added: [], typeChanges: [], removed: [] });
  });

  test("adds a new schema field with ALTER TABLE ADD COLUMN and keeps old rows", () => {
    const db = new Database(":memory:");
    migrateOutputTables(db, new OutputRegistry({ analysis }).all());
    db.exec("INSERT INTO analysis (run_id, node_id, iteration, summary, severity) VALUES ('r1', 'a', 0, 'old', 'low')");
    const v2 = z.object({ summary: z.string(), severity: z.enum(["low", "medium", "high"]), rootCause: z.string(), confidence: z.number().optional() });
    const report = migrateOutputTables(db, new OutputRegistry({ analysis: v2 }).all());
    expect(report.created).toEqual([]);
    expect(report.added).toEqual([
      { table: "analysis", column: "root_cause" },
      { table: "analysis", column: "confidence" },
    ]);
    expect(tableInfo(db, "analysis").map((c) => c.name)).toEqual(["run_id", "node_id", "iteration", "summary", "severity", "root_cause", "confidence"]);
    expect(db.query("SELECT run_id, node_id, summary, severity, root_cause, confidence FROM analysis").all()).toEqual([
      { run_id: "r1", node_id: "a", summary: "old", severity: "low", root_cause: null, confidence: null },
    ]);
  });

  test("reports a type change and does not apply it", () => {
    const db = new Database(":memory:");
    migrateOutputTables(db, new OutputRegistry({ analysis }).all());
    db.exec("INSERT INTO analysis (run_id, node_id, iteration, summary, severity) VALUES ('r1', 'a', 0, 'kept', 'low')");
    const v2 = z.object({ summary: z.number(), severity: z.enum(["low", "medium", "high"]) });
    const report = migrateOutputTables(db, new OutputRegistry({ analysis: v2 }).all());
    expect(report.typeChanges).toEqual([{ table: "analysis", column: "summary", expected: "real", actual: "text" }]);
    expect(report.added).toEqual([]);
    expect(
      tableInfo(db, "analysis")
        .find((c) => c.name === "summary")!
        .type.toLowerCase(),
    ).toBe("text");
    expect(db.query("SELECT summary FROM analysis").get()).toEqual({ summary: "kept" });
  });

  test("reports a removed field and keeps its column and data", () => {
    const db = new Database(":memory:");
    migrateOutputTables(db, new OutputRegistry({ analysis }).all());
    db.exec("INSERT INTO analysis (run_id, node_id, iteration, summary, severity) VALUES ('r1', 'a', 0, 'kept', 'high')");
    const v2 = z.object({ summary: z.string() });
    const report = migrateOutputTables(db, new OutputRegistry({ analysis: v2 }).all());
    expect(report.removed).toEqual([{ table: "analysis", column: "severity" }]);
    expect(tableInfo(db, "analysis").map((c) => c.name)).toContain("severity");
    expect(db.query("SELECT severity FROM analysis").get()).toEqual({ severity: "high" });
  });

  test("creates a missing custom table but never alters an existing one", () => {
    const db = new Database(":memory:");
    const registry = new OutputRegistry({ audit: customTable });
    expect(migrateOutputTables(db, registry.all()).created).toEqual(["audit_log"]);
    const wider = sqliteTable("audit_log", {
      runId: text("run_id").notNull(),
      nodeId: text("node_id").notNull(),
      message: text("message").notNull(),
      extra: text("extra"),
    });
    const report = migrateOutputTables(db, new OutputRegistry({ audit: wider }).all());
    expect(report).toEqual({ created: [], added: [], typeChanges: [], removed: [] });
    expect(tableInfo(db, "audit_log").map((c) => c.name)).not.toContain("extra");
  });
});

describe("writeOutputRow / readOutputRow", () => {
  function setup(schemas: ConstructorParameters<typeof OutputRegistry>[0]) {
    const sdb = memoryDb();
    const registry = new OutputRegistry(schemas);
    migrateOutputTables(sdb.sqlite, registry.all());
    return { sdb, d: sdb.sql, registry };
  }

  test("round-trips a row: booleans come back as booleans and JSON columns parsed", async () => {
    const { d, sdb, registry } = setup({ codeReview });
    const info = registry.resolve(codeReview);
    const key = { runId: "r1", nodeId: "review", iteration: 0 };
    await writeOutputRow(d, info, key, { approved: true, score: 7, tags: ["a", "b"], detail: { file: "x.ts", line: 3 } });
    expect(await readOutputRow(d, info, key)).toEqual({
      runId: "r1",
      nodeId: "review",
      iteration: 0,
      approved: true,
      score: 7,
      ratio: null,
      tags: ["a", "b"],
      detail: { file: "x.ts", line: 3 },
    });
    expect(sdb.sqlite.query("SELECT approved, tags, detail FROM code_review").get()).toEqual({
      approved: 1,
      tags: '["a","b"]',
      detail: '{"file":"x.ts","line":3}',
    });
  });

  test("false is stored as 0 and read back as false", async () => {
    const { d, registry } = setup({ codeReview });
    const info = registry.resolve("codeReview");
    const key = { runId: "r1", nodeId: "review", iteration: 0 };
    await writeOutputRow(d, info, key, { approved: false, score: 0, tags: [], detail: null });
    expect(await readOutputRow(d, info, key)).toMatchObject({ approved: false, score: 0, tags: [], detail: null });
  });

  test("null and absent values are SQL NULL in every kind of column, and read back as null", async () => {
    const nullable = z.object({
      flag: z.boolean().nullable(),
      data: z.object({ a: z.number() }).nullable(),
      when: z.date().nullable(),
      note: z.string().optional(),
    });
    const { d, sdb, registry } = setup({ nullable });
    const info = registry.resolve(nullable);
    const key = { runId: "r1", nodeId: "n", iteration: 0 };
    await writeOutputRow(d, info, key, { flag: null, data: null, when: null });
    expect(sdb.sqlite.query('SELECT flag, data, "when", note FROM nullable').get()).toEqual({ flag: null, data: null, when: null, note: null });
    expect(await readOutputRow(d, info, key)).toMatchObject({ flag: null, data: null, when: null, note: null });
    const when = new Date(1_700_000_000_123);
    await writeOutputRow(d, info, key, { flag: false, data: { a: 1 }, when, note: "x" });
    expect(sdb.sqlite.query('SELECT flag, data, "when", note FROM nullable').get()).toEqual({ flag: 0, data: '{"a":1}', when: 1_700_000_000_123, note: "x" });
    expect(await readOutputRow(d, info, key)).toMatchObject({ flag: false, data: { a: 1 }, when, note: "x" });
  });

  test("a rewrite without an optional field leaves no trace of its earlier value", async () => {
    const noted = z.object({ summary: z.string(), note: z.string().optional() });
    const { d, sdb, registry } = setup({ noted });
    const info = registry.resolve(noted);
    const key = { runId: "r1", nodeId: "a", iteration: 0 };
    await writeOutputRow(d, info, key, { summary: "a", note: "old" });
    expect(await writeOutputRow(d, info, key, { summary: "b" })).toEqual({ runId: "r1", nodeId: "a", iteration: 0, summary: "b", note: null });
    expect(sdb.sqlite.query("SELECT summary, note FROM noted").all()).toEqual([{ summary: "b", note: null }]);
  });

  test("writing the same key twice replaces the row", async () => {
    const { d, sdb, registry } = setup({ analysis });
    const info = registry.resolve(analysis);
    const key = { runId: "r1", nodeId: "a", iteration: 0 };
    await writeOutputRow(d, info, key, { summary: "first", severity: "low" });
    await writeOutputRow(d, info, key, { summary: "second", severity: "high" });
    expect(sdb.sqlite.query("SELECT summary, severity FROM analysis").all()).toEqual([{ summary: "second", severity: "high" }]);
  });

  test("rows of other iterations, nodes and runs are distinct and left alone", async () => {
    const { d, registry } = setup({ analysis });
    const info = registry.resolve(analysis);
    await writeOutputRow(d, info, { runId: "r1", nodeId: "a", iteration: 0 }, { summary: "i0", severity: "low" });
    await writeOutputRow(d, info, { runId: "r1", nodeId: "a", iteration: 1 }, { summary: "i1", severity: "low" });
    await writeOutputRow(d, info, { runId: "r1", nodeId: "b", iteration: 0 }, { summary: "b", severity: "low" });
    await writeOutputRow(d, info, { runId: "r2", nodeId: "a", iteration: 0 }, { summary: "other run", severity: "low" });
    expect(await readOutputRow(d, info, { runId: "r1", nodeId: "a", iteration: 1 })).toMatchObject({ summary: "i1" });
    expect((await readOutputRows(d, info, "r1")).map((r) => [r.nodeId, r.iteration, r.summary])).toEqual([
      ["a", 0, "i0"],
      ["a", 1, "i1"],
      ["b", 0, "b"],
    ]);
  });

  test("readOutputRow returns undefined for a key with no row", async () => {
    const { d, registry } = setup({ analysis });
    expect(await readOutputRow(d, registry.resolve(analysis), { runId: "r1", nodeId: "a", iteration: 0 })).toBeUndefined();
  });

  test("a payload-only table stores the value in payload and parses it back", async () => {
    const { d, sdb, registry } = setup({ blob });
    const info = registry.resolve(blob);
    const key = { runId: "r1", nodeId: "p", iteration: 0 };
    await writeOutputRow(d, info, key, { payload: { items: [1, 2], ok: true } });
    expect(tableInfo(sdb.sqlite, "blob").map((c) => c.name)).toEqual(["run_id", "node_id", "iteration", "payload"]);
    expect(sdb.sqlite.query("SELECT payload FROM blob").get()).toEqual({ payload: '{"items":[1,2],"ok":true}' });
    expect(await readOutputRow(d, info, key)).toMatchObject({ payload: { items: [1, 2], ok: true } });
  });

  test("a payload-only table round-trips a scalar payload", async () => {
    const { d, registry } = setup({ blob });
    const info = registry.resolve(blob);
    const key = { runId: "r1", nodeId: "p", iteration: 0 };
    await writeOutputRow(d, info, key, { payload: "just text" });
    expect((await readOutputRow(d, info, key))?.payload).toBe("just text");
  });

  test("a date field is stored as milliseconds and read back as a Date", async () => {
    const { d, sdb, registry } = setup({ stamp: z.object({ at: z.date() }) });
    const info = registry.resolve("stamp");
    const key = { runId: "r1", nodeId: "s", iteration: 0 };
    const at = new Date(1_700_000_000_123);
    await writeOutputRow(d, info, key, { at });
    expect(sdb.sqlite.query("SELECT at FROM stamp").get()).toEqual({ at: 1_700_000_000_123 });
    expect(((await readOutputRow(d, info, key))!.at as Date).getTime()).toBe(1_700_000_000_123);
  });

  test("values keyed by column name are written too", async () => {
    const { d, registry } = setup({ analysis: z.object({ rootCause: z.string() }) });
    const info = registry.resolve("analysis");
    const key = { runId: "r1", nodeId: "a", iteration: 0 };
    await writeOutputRow(d, info, key, { root_cause: "race" });
    expect(await readOutputRow(d, info, key)).toMatchObject({ rootCause: "race" });
  });

  test("a custom table is written and read with its own columns", async () => {
    const { d, sdb, registry } = setup({ audit: customTable });
    const info = registry.resolve(customTable);
    const key = { runId: "r1", nodeId: "log", iteration: 2 };
    await writeOutputRow(d, info, key, { message: "hello" });
    await writeOutputRow(d, info, key, { message: "again" });
    expect(sdb.sqlite.query("SELECT run_id, node_id, iteration, message FROM audit_log").all()).toEqual([
      { run_id: "r1", node_id: "log", iteration: 2, message: "again" },
    ]);
    expect(await readOutputRow(d, info, key)).toEqual({ runId: "r1", nodeId: "log", iteration: 2, message: "again" });
  });

  test("an optional z.unknown() field may be left out of the row", async () => {
    const { d, registry } = setup({ withMeta: z.object({ name: z.string(), meta: z.unknown() }) });
    const info = registry.resolve("withMeta");
    const key = { runId: "r1", nodeId: "m", iteration: 0 };
    await writeOutputRow(d, info, key, { name: "n" });
    expect(await readOutputRow(d, info, key)).toMatchObject({ name: "n", meta: null });
  });

  test("a field piped into a number reads back as a number", async () => {
    const schema = z.object({ n: z.string().pipe(z.coerce.number()) });
    const { d, registry } = setup({ piped: schema });
    const info = registry.resolve("piped");
    const key = { runId: "r1", nodeId: "p", iteration: 0 };
    await writeOutputRow(d, info, key, schema.parse({ n: "5" }));
    expect((await readOutputRow(d, info, key))?.n).toBe(5);
  });
});
