/**
 * A PostgreSQL database that cannot be reached at first contact (no server, an unknown host, a
 * missing database, a refused login) is DB_UNREACHABLE saying what to fix, from runWorkflow and
 * PgDb alike; later losses of a connection stay retryable (DB_WRITE_FAILED, DB_UNAVAILABLE).
 */
import { describe, expect, test } from "bun:test";
import { firstContactError, PgDb } from "../../../src/db/pg/pg-db.ts";
import { runWorkflow } from "../../../src/engine/index.ts";
import { SmithersError } from "../../../src/errors/index.ts";
import steps from "../../fixtures/steps.tsx";
import { rejection } from "../../helpers.ts";
import { pgTestServer } from "../../support/postgres.ts";

const pgError = (code: string, message: string) => Object.assign(new Error(message), { code });

describe("firstContactError", () => {
  test("a refused connection after the retries is DB_UNREACHABLE: start the server or fix host and port", () => {
    const busy = new SmithersError("DB_WRITE_FAILED", "ensureSmithersTables: the database stayed busy after 6 retries", {
      cause: pgError("ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:1"),
    });
    const error = firstContactError("postgres://u@127.0.0.1:1/x", busy) as SmithersError;
    expect([error.code, error.message]).toEqual([
      "DB_UNREACHABLE",
      "Cannot reach PostgreSQL at postgres://u@127.0.0.1:1/x (connect ECONNREFUSED 127.0.0.1:1): start the server, or fix the host and port in --db or $SMITHERS_DATABASE_URL",
    ]);
  });

  test("a refused login is DB_UNREACHABLE: fix the user and password", () => {
    const error = firstContactError("postgres://u:***@h/x", pgError("28P01", 'password authentication failed for user "u"')) as SmithersError;
    expect(error.code).toBe("DB_UNREACHABLE");
    expect(error.message).toEndWith("fix the user and password in --db or $SMITHERS_DATABASE_URL");
  });

  test("an error that is not about reaching the server is passed on as it is", () => {
    const other = pgError("42P01", 'relation "x" does not exist');
    expect(firstContactError("postgres://h/x", other)).toBe(other);
  });
});

describe("PgDb's first contact", () => {
  test("runWorkflow on a URL nothing listens at rejects with DB_UNREACHABLE", async () => {
    const error = await rejection<SmithersError>(runWorkflow(steps, { dbPath: "postgres://smithers@127.0.0.1:1/smithers", input: { label: "x" } }));
    expect(error.code).toBe("DB_UNREACHABLE");
    expect(error.message).toContain("Cannot reach PostgreSQL at postgres://smithers@127.0.0.1:1/smithers");
  });

  test("a database the server does not have is DB_UNREACHABLE saying to create it", async () => {
    const pg = await pgTestServer();
    if (!pg) return; // pgTestServer warned: no PostgreSQL here
    const url = new URL(pg.url);
    url.pathname = "/no_such_database";
    const db = new PgDb(url.toString());
    const error = await rejection<SmithersError>(db.read("look", (q) => q.get("SELECT 1")));
    await db.close();
    expect(error.code).toBe("DB_UNREACHABLE");
    expect(error.message).toContain('has no such database (database "no_such_database" does not exist): create it (createdb)');
  });
});
