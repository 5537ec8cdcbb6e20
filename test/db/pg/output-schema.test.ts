import { describe, expect, test } from "bun:test";
import { getTableConfig } from "drizzle-orm/pg-core";
import { z } from "zod";
import { fieldColumns } from "../../../src/db/output-schema.ts";
import { addPgColumnStatement, createPgTableStatements } from "../../../src/db/pg/ddl.ts";
import { zodToPgInputTable, zodToPgTable } from "../../../src/db/pg/output-schema.ts";
import { connectPg, pgTestServer } from "../../support/postgres.ts";

const pg = await pgTestServer();

const review = z.object({
  summary: z.string(),
  score: z.number().int(),
  ratio: z.number(),
  ok: z.boolean(),
  reviewedAt: z.date(),
  details: z.object({ lines: z.number() }),
  tags: z.array(z.string()),
  note: z.string().nullable(),
});

type Column = { name: string; type: string; nullable: string };

async function columnsOf(url: string, table: string): Promise<Column[]> {
  const sql = connectPg(url);
  const rows = await sql<Column[]>`
    select column_name as name, data_type as type, is_nullable as nullable
      from information_schema.columns where table_name = ${table} order by ordinal_position`;
  await sql.end();
  return [...rows];
}

async function apply(url: string, statements: string[]): Promise<void> {
  const sql = connectPg(url);
  for (const statement of statements) await sql.unsafe(statement);
  await sql.end();
}

describe("zodToPgTable", () => {
  test("keys the table by (run_id, node_id, iteration)", () => {
    const config = getTableConfig(zodToPgTable("code_review", fieldColumns("codeReview", review)));
    expect(config.primaryKeys.map((pk) => pk.columns.map((c) => c.name))).toEqual([["run_id", "node_id", "iteration"]]);
  });
});

describe.skipIf(!pg)("zodToPgTable on PostgreSQL", () => {
  test("creates native columns: text, bigint, double precision, boolean, timestamptz and jsonb", async () => {
    const url = await pg!.createDatabase();
    await apply(url, createPgTableStatements(zodToPgTable("code_review", fieldColumns("codeReview", review))));
    expect(await columnsOf(url, "code_review")).toEqual([
      { name: "run_id", type: "text", nullable: "NO" },
      { name: "node_id", type: "text", nullable: "NO" },
      { name: "iteration", type: "bigint", nullable: "NO" },
      { name: "summary", type: "text", nullable: "NO" },
      { name: "score", type: "bigint", nullable: "NO" },
      { name: "ratio", type: "double precision", nullable: "NO" },
      { name: "ok", type: "boolean", nullable: "NO" },
      { name: "reviewed_at", type: "timestamp with time zone", nullable: "NO" },
      { name: "details", type: "jsonb", nullable: "NO" },
      { name: "tags", type: "jsonb", nullable: "NO" },
      { name: "note", type: "text", nullable: "YES" },
    ]);
  });

  test("a field added to the schema becomes a new nullable column", async () => {
    const url = await pg!.createDatabase();
    await apply(url, createPgTableStatements(zodToPgTable("code_review", fieldColumns("codeReview", review))));
    const grown = zodToPgTable("code_review", fieldColumns("codeReview", review.extend({ severity: z.number().int() })));
    const severity = getTableConfig(grown).columns.find((c) => c.name === "severity")!;
    await apply(url, [addPgColumnStatement("code_review", severity)]);
    expect((await columnsOf(url, "code_review")).at(-1)).toEqual({ name: "severity", type: "bigint", nullable: "YES" });
  });
});

describe.skipIf(!pg)("zodToPgInputTable", () => {
  test("creates the input table keyed by run_id alone", async () => {
    const url = await pg!.createDatabase();
    await apply(url, createPgTableStatements(zodToPgInputTable(fieldColumns("input", z.object({ topic: z.string(), limit: z.number().int().optional() })))));
    const sql = connectPg(url);
    const [pk] = await sql<{ columns: string }[]>`
      select string_agg(a.attname, ',' order by a.attnum) as columns
        from pg_index i join pg_attribute a on a.attrelid = i.indrelid and a.attnum = any(i.indkey)
       where i.indrelid = 'input'::regclass and i.indisprimary`;
    await sql.end();
    expect(pk!.columns).toBe("run_id");
    expect(await columnsOf(url, "input")).toEqual([
      { name: "run_id", type: "text", nullable: "NO" },
      { name: "topic", type: "text", nullable: "NO" },
      { name: "limit", type: "bigint", nullable: "YES" },
    ]);
  });
});
