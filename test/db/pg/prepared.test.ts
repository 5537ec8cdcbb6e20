/**
 * PgSql runs statement texts as prepared statements on the server (one round trip each instead of
 * two), and a transaction whose prepared statement's table changed shape under it runs again.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { preparesStatements } from "../../../src/db/pg/driver.ts";
import { PgDb } from "../../../src/db/pg/pg-db.ts";
import { connectPg, pgTestServer } from "../../support/postgres.ts";

const pg = await pgTestServer();

const opened: PgDb[] = [];
afterEach(async () => {
  for (const db of opened.splice(0)) await db.close();
});

/** A database on a pool of one connection, so every statement runs on the same session. */
async function openOnOneConnection(query = ""): Promise<{ db: PgDb; url: string }> {
  const url = await pg!.createDatabase();
  const db = new PgDb(url + query, { max: 1 });
  opened.push(db);
  return { db, url };
}

describe.skipIf(!pg)("PgSql prepared statements", () => {
  test("a statement's text is prepared on the server once per connection, however often it runs", async () => {
    const { db } = await openOnOneConnection();
    const text = "SELECT count(*) AS c FROM _smithers_nodes WHERE run_id = ?";
    for (let i = 0; i < 3; i++) await db.withTransaction("t", (q) => q.get(text, "r"));
    const prepared = await db.read("look", (q) => q.all<{ statement: string }>("SELECT statement FROM pg_prepared_statements"));
    expect(prepared.filter((r) => r.statement === "SELECT count(*) AS c FROM _smithers_nodes WHERE run_id = $1").length).toBe(1);
  });

  test("with ?prepare=false in the URL (a pooler that cannot keep them) nothing is prepared", async () => {
    const { db } = await openOnOneConnection("?prepare=false");
    for (let i = 0; i < 3; i++) await db.withTransaction("t", (q) => q.get("SELECT count(*) AS c FROM _smithers_nodes WHERE run_id = ?", "r"));
    expect(await db.read("look", (q) => q.all("SELECT statement FROM pg_prepared_statements"))).toEqual([]);
  });

  test("PGPREPARE=false in the environment prepares nothing either; a value that is not true or false is INVALID_OPTION", async () => {
    const before = process.env.PGPREPARE;
    process.env.PGPREPARE = "false";
    try {
      const { db } = await openOnOneConnection();
      for (let i = 0; i < 3; i++) await db.withTransaction("t", (q) => q.get("SELECT count(*) AS c FROM _smithers_nodes WHERE run_id = ?", "r"));
      expect(await db.read("look", (q) => q.all("SELECT statement FROM pg_prepared_statements"))).toEqual([]);
    } finally {
      if (before === undefined) delete process.env.PGPREPARE;
      else process.env.PGPREPARE = before;
    }
    expect(preparesStatements("postgres://me@db/app?prepare=off")).toBe(false);
    expect(preparesStatements("postgres://me@db/app?prepare=true")).toBe(true);
    expect(() => preparesStatements("postgres://me@db/app?prepare=sometimes")).toThrow(expect.objectContaining({ code: "INVALID_OPTION" }));
  });

  test("a transaction whose prepared statement's table changed shape under it runs again and reads the new shape", async () => {
    const { db, url } = await openOnOneConnection();
    const sql = connectPg(url);
    try {
      await sql`CREATE TABLE shape (id int PRIMARY KEY, a text)`;
      await sql`INSERT INTO shape VALUES (1, 'x')`;
      const read = () => db.withTransaction("t", (q) => q.all("SELECT * FROM shape WHERE id = ?", 1));
      expect(await read()).toEqual([{ id: 1, a: "x" }]);
      await sql`ALTER TABLE shape ADD COLUMN b text DEFAULT 'y'`; // another process migrates the table
      expect(await read()).toEqual([{ id: 1, a: "x", b: "y" }]);
    } finally {
      await sql.end();
    }
  });
});
