import { describe, expect, test } from "bun:test";
import { bigint, getTableConfig, pgTable, text } from "drizzle-orm/pg-core";
import { addPgColumnStatement, createPgTableStatements, pgColumnDefinition } from "../../../src/db/pg/ddl.ts";
import { PgSql, type PgClient } from "../../../src/db/pg/driver.ts";
import { liveColumns } from "../../../src/db/schema-signature.ts";

/** Each column's name and type as the database reports them (what the migration compares with getSQLType()). */
const columnTypes = async (sql: PgClient, table: string) => (await liveColumns(new PgSql(sql), table)).map((c) => ({ name: c.name, type: c.type }));
import { pgInternalTables } from "../../../src/db/pg/tables.ts";
import { connectPg, pgTestServer } from "../../support/postgres.ts";

const pg = await pgTestServer();

async function freshDb() {
  return connectPg(await pg!.createDatabase());
}

const internal = Object.values(pgInternalTables);

describe("pgColumnDefinition", () => {
  test("writes boolean defaults as TRUE and FALSE and quotes text defaults", () => {
    const cached = pgInternalTables.smithersAttempts.cached;
    expect(pgColumnDefinition(cached, false)).toBe('"cached" boolean NOT NULL DEFAULT FALSE');
    expect(pgColumnDefinition(pgInternalTables.smithersCron.enabled, false)).toBe('"enabled" boolean NOT NULL DEFAULT TRUE');
    expect(pgColumnDefinition(pgInternalTables.smithersFrames.encoding, false)).toBe(`"encoding" text NOT NULL DEFAULT 'full'`);
  });
});

describe.skipIf(!pg)("createPgTableStatements", () => {
  test("every internal table's statements run on a fresh database and create the table with its indexes", async () => {
    const sql = await freshDb();
    for (const table of internal) for (const statement of createPgTableStatements(table)) await sql.unsafe(statement);
    const tables = await sql<{ name: string }[]>`select table_name as name from information_schema.tables where table_schema = 'public' order by 1`;
    const indexes = await sql<{ name: string }[]>`select indexname as name from pg_indexes where schemaname = 'public' and indexname like '%\_idx'`;
    await sql.end();
    expect(tables.map((t) => t.name)).toEqual(internal.map((t) => getTableConfig(t).name).sort());
    const declared = internal.flatMap((t) => getTableConfig(t).indexes.map((i) => i.config.name));
    expect(indexes.map((i) => i.name).sort()).toEqual(declared.sort() as string[]);
  });

  test("running the statements a second time changes nothing", async () => {
    const sql = await freshDb();
    const snapshot = async () => [
      ...(await sql`select table_name, column_name, data_type, is_nullable, column_default from information_schema.columns where table_schema = 'public' order by 1, 2`),
    ];
    for (const table of internal) for (const statement of createPgTableStatements(table)) await sql.unsafe(statement);
    const first = await snapshot();
    for (const table of internal) for (const statement of createPgTableStatements(table)) await sql.unsafe(statement);
    const second = await snapshot();
    await sql.end();
    expect(second).toEqual(first);
  });

  test("a unique index refuses a second row with the same key (the signal dedupe key)", async () => {
    const sql = await freshDb();
    for (const statement of createPgTableStatements(pgInternalTables.smithersSignals)) await sql.unsafe(statement);
    const insert = (seq: number) =>
      sql`insert into _smithers_signals (run_id, seq, signal_name, payload_json, received_at_ms, dedupe_key) values ('r', ${seq}, 's', '{}', 1, 'k')`;
    await insert(1);
    const error = await insert(2).catch((e: { code?: string }) => e);
    await sql.end();
    expect((error as { code?: string }).code).toBe("23505"); // unique_violation
  });
});

describe.skipIf(!pg)("liveColumns on PostgreSQL", () => {
  test("reads back, for every internal table, the types getSQLType() declares", async () => {
    const sql = await freshDb();
    for (const table of internal) for (const statement of createPgTableStatements(table)) await sql.unsafe(statement);
    for (const table of internal) {
      const { name, columns } = getTableConfig(table);
      expect(await columnTypes(sql, name)).toEqual(columns.map((c) => ({ name: c.name, type: c.getSQLType() })));
    }
    await sql.end();
  });

  test("is empty for a table that does not exist", async () => {
    const sql = await freshDb();
    const columns = await columnTypes(sql, "no_such_table");
    await sql.end();
    expect(columns).toEqual([]);
  });
});

describe.skipIf(!pg)("addPgColumnStatement", () => {
  const before = pgTable("grown", { id: text("id").primaryKey() });
  const after = pgTable("grown", {
    id: text("id").primaryKey(),
    count: bigint("count", { mode: "number" }).notNull(),
    note: text("note").notNull().default("-"),
  });

  test("adds the missing column, nullable when it is NOT NULL without a default", async () => {
    const sql = await freshDb();
    for (const statement of createPgTableStatements(before)) await sql.unsafe(statement);
    await sql`insert into grown (id) values ('old')`;
    await sql.unsafe(addPgColumnStatement("grown", after.count));
    await sql.unsafe(addPgColumnStatement("grown", after.note));
    const columns = await sql<{ name: string; nullable: string; type: string }[]>`
      select column_name as name, is_nullable as nullable, data_type as type from information_schema.columns where table_name = 'grown' order by ordinal_position`;
    const [row] = await sql`select * from grown`;
    await sql.end();
    expect([...columns]).toEqual([
      { name: "id", nullable: "NO", type: "text" },
      { name: "count", nullable: "YES", type: "bigint" },
      { name: "note", nullable: "NO", type: "text" },
    ]);
    expect(row).toEqual({ id: "old", count: null, note: "-" });
  });

  test("adding a column the table already has changes nothing", async () => {
    const sql = await freshDb();
    for (const statement of createPgTableStatements(after)) await sql.unsafe(statement);
    await sql.unsafe(addPgColumnStatement("grown", after.count));
    const columns = await columnTypes(sql, "grown");
    await sql.end();
    expect(columns).toEqual([
      { name: "id", type: "text" },
      { name: "count", type: "bigint" },
      { name: "note", type: "text" },
    ]);
  });
});
