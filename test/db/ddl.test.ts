import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { z } from "zod";
import { addColumnStatement, columnDefinition, createTableStatements, quoteIdentifier } from "../../src/db/ddl.ts";
import { fieldColumns, zodToTable } from "../../src/db/output-schema.ts";

type ColumnInfo = { name: string; type: string; notnull: number; dflt_value: string | null; pk: number };

function tableInfo(db: Database, table: string): ColumnInfo[] {
  return db.query<ColumnInfo, [string]>('SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(?)').all(table);
}

function apply(db: Database, statements: string[]): void {
  for (const s of statements) db.exec(s);
}

const outputTable = zodToTable(
  "code_review",
  fieldColumns("codeReview", z.object({ summary: z.string(), score: z.number().int(), ok: z.boolean(), note: z.string().optional() })),
);

describe("quoteIdentifier", () => {
  test("wraps a name in double quotes and doubles embedded quotes", () => {
    expect(quoteIdentifier("plain")).toBe('"plain"');
    expect(quoteIdentifier('we"ird')).toBe('"we""ird"');
  });
});

describe("columnDefinition", () => {
  test("writes name, type, NOT NULL and a literal default", () => {
    const t = sqliteTable("t", { n: integer("n").notNull().default(0), s: text("s").default("it's") });
    const [n, s] = [t.n, t.s];
    expect(columnDefinition(n, false)).toBe('"n" integer NOT NULL DEFAULT 0');
    expect(columnDefinition(s, false)).toBe(`"s" text DEFAULT 'it''s'`);
  });

  test("writes boolean defaults as 0 and 1", () => {
    const t = sqliteTable("t", { on: integer("on", { mode: "boolean" }).notNull().default(true), off: integer("off", { mode: "boolean" }).default(false) });
    expect(columnDefinition(t.on, false)).toBe('"on" integer NOT NULL DEFAULT 1');
    expect(columnDefinition(t.off, false)).toBe('"off" integer DEFAULT 0');
  });

  test("omits SQL-expression defaults", () => {
    const t = sqliteTable("t", { at: integer("at").default(sql`(unixepoch())`) });
    expect(columnDefinition(t.at, false)).toBe('"at" integer');
  });

  test("an inline primary key replaces NOT NULL", () => {
    const t = sqliteTable("t", { id: text("id").primaryKey() });
    expect(columnDefinition(t.id, true)).toBe('"id" text PRIMARY KEY');
  });
});

describe("createTableStatements", () => {
  test("creates an output table with the composite primary key (run_id, node_id, iteration)", () => {
    const db = new Database(":memory:");
    apply(db, createTableStatements(outputTable));
    const cols = tableInfo(db, "code_review");
    expect(cols.map((c) => [c.name, c.type.toLowerCase(), c.notnull, c.pk])).toEqual([
      ["run_id", "text", 1, 1],
      ["node_id", "text", 1, 2],
      ["iteration", "integer", 1, 3],
      ["summary", "text", 1, 0],
      ["score", "integer", 1, 0],
      ["ok", "integer", 1, 0],
      ["note", "text", 0, 0],
    ]);
    expect(cols.find((c) => c.name === "iteration")!.dflt_value).toBe("0");
  });

  test("the primary key rejects a second row with the same run, node and iteration", () => {
    const db = new Database(":memory:");
    apply(db, createTableStatements(outputTable));
    const insert = "INSERT INTO code_review (run_id, node_id, iteration, summary, score, ok) VALUES ('r', 'n', 0, 's', 1, 1)";
    db.exec(insert);
    expect(() => db.exec(insert)).toThrow(/UNIQUE|PRIMARY KEY/i);
    db.exec("INSERT INTO code_review (run_id, node_id, iteration, summary, score, ok) VALUES ('r', 'n', 1, 's', 1, 1)");
    expect(db.query("SELECT count(*) AS n FROM code_review").get()).toEqual({ n: 2 });
  });

  test("is idempotent: running the statements twice keeps the table", () => {
    const db = new Database(":memory:");
    apply(db, createTableStatements(outputTable));
    db.exec("INSERT INTO code_review (run_id, node_id, summary, score, ok) VALUES ('r', 'n', 's', 1, 0)");
    apply(db, createTableStatements(outputTable));
    expect(db.query("SELECT iteration, summary FROM code_review").all()).toEqual([{ iteration: 0, summary: "s" }]);
  });

  test("uses an inline primary key for a single-column key", () => {
    const t = sqliteTable("inputs", { runId: text("run_id").primaryKey(), v: real("v") });
    const [create] = createTableStatements(t);
    expect(create).toContain('"run_id" text PRIMARY KEY');
    expect(create).not.toContain("PRIMARY KEY (");
  });

  test("emits one CREATE INDEX per index, UNIQUE for unique indexes", () => {
    const t = sqliteTable("things", { id: text("id").primaryKey(), a: text("a"), b: integer("b") }, (c) => [
      index("things_a").on(c.a),
      uniqueIndex("things_ab").on(c.a, c.b),
    ]);
    const statements = createTableStatements(t);
    expect(statements.slice(1)).toEqual([
      'CREATE INDEX IF NOT EXISTS "things_a" ON "things" ("a")',
      'CREATE UNIQUE INDEX IF NOT EXISTS "things_ab" ON "things" ("a", "b")',
    ]);
    const db = new Database(":memory:");
    apply(db, statements);
    const names = db
      .query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'things' AND name LIKE 'things_%' ORDER BY name")
      .all();
    expect(names.map((n) => n.name)).toEqual(["things_a", "things_ab"]);
  });

  test("a composite primary key declared with primaryKey() appears as a table constraint", () => {
    const t = sqliteTable("pairs", { a: text("a").notNull(), b: text("b").notNull() }, (c) => [primaryKey({ columns: [c.a, c.b] })]);
    expect(createTableStatements(t)[0]).toContain('PRIMARY KEY ("a", "b")');
  });

  test("a JSON column default is written as JSON text", () => {
    const t = sqliteTable("j", { id: text("id").primaryKey(), tags: text("tags", { mode: "json" }).notNull().default({ a: 1 }) });
    const db = new Database(":memory:");
    apply(db, createTableStatements(t));
    db.exec("INSERT INTO j (id) VALUES ('x')");
    expect(db.query("SELECT tags FROM j").get()).toEqual({ tags: '{"a":1}' });
  });

  test("a column declared unique() rejects duplicate values", () => {
    const t = sqliteTable("u", { id: text("id").primaryKey(), email: text("email").unique() });
    const db = new Database(":memory:");
    apply(db, createTableStatements(t));
    db.exec("INSERT INTO u (id, email) VALUES ('1', 'a@x')");
    expect(() => db.exec("INSERT INTO u (id, email) VALUES ('2', 'a@x')")).toThrow(/UNIQUE/i);
  });
  test("a column declared with references() gets a foreign key", () => {
    const parent = sqliteTable("parent", { id: text("id").primaryKey() });
    const child = sqliteTable("child", { id: text("id").primaryKey(), parentId: text("parent_id").references(() => parent.id) });
    const db = new Database(":memory:");
    db.exec("PRAGMA foreign_keys = ON");
    apply(db, createTableStatements(parent));
    apply(db, createTableStatements(child));
    const fks = db.query<{ table: string; from: string; to: string }, []>('SELECT "table", "from", "to" FROM pragma_foreign_key_list(\'child\')').all();
    expect(fks).toEqual([{ table: "parent", from: "parent_id", to: "id" }]);
  });
});

describe("addColumnStatement", () => {
  test("adds a nullable column as declared", () => {
    const t = sqliteTable("t", { note: text("note") });
    expect(addColumnStatement("t", t.note)).toBe('ALTER TABLE "t" ADD COLUMN "note" text');
  });

  test("drops NOT NULL from a column without a default so existing rows stay valid", () => {
    const t = sqliteTable("t", { score: integer("score").notNull() });
    expect(addColumnStatement("t", t.score)).toBe('ALTER TABLE "t" ADD COLUMN "score" integer');
  });

  test("keeps NOT NULL when the column has a default", () => {
    const t = sqliteTable("t", { n: integer("n").notNull().default(7) });
    expect(addColumnStatement("t", t.n)).toBe('ALTER TABLE "t" ADD COLUMN "n" integer NOT NULL DEFAULT 7');
  });

  test("runs on a table with rows: old rows keep their values and get NULL or the default", () => {
    const db = new Database(":memory:");
    db.exec('CREATE TABLE "t" ("id" text PRIMARY KEY)');
    db.exec("INSERT INTO t (id) VALUES ('old')");
    const t = sqliteTable("t", { score: integer("score").notNull(), n: integer("n").notNull().default(7) });
    db.exec(addColumnStatement("t", t.score));
    db.exec(addColumnStatement("t", t.n));
    expect(db.query("SELECT id, score, n FROM t").all()).toEqual([{ id: "old", score: null, n: 7 }]);
  });
});
