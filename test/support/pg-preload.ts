/**
 * Preload for the PostgreSQL pass of the engine suite
 * (`SMITHERS_TEST_BACKEND=postgres bun test --preload ./test/support/pg-preload.ts test/engine`):
 * starts this process's test server, creates the one database the pass shares (each test gets a
 * schema of its own in it, see tempDbPath) and hands its URL to test/helpers.ts.
 *
 * The pass was asked for explicitly, so a missing PostgreSQL fails it here instead of letting
 * every test silently run on SQLite or skip.
 */
import { pgTestServer } from "./postgres.ts";

export const PG_TEST_URL_ENV = "SMITHERS_TEST_PG_URL";

if (process.env.SMITHERS_TEST_BACKEND !== "postgres") {
  throw new Error("test/support/pg-preload.ts is for the PostgreSQL pass: set SMITHERS_TEST_BACKEND=postgres");
}
// Tests leave the databases they open open, as they may on SQLite where an idle handle costs
// nothing; on PostgreSQL each holds pooled connections. postgres.js reads this default from the
// environment (the engine's pool sets no idle_timeout of its own), so idle connections close after
// a second and the pass stays far below the server's max_connections.
process.env.PGIDLE_TIMEOUT ??= "1";
const server = await pgTestServer();
if (!server) throw new Error("The PostgreSQL test pass needs a PostgreSQL server and none could be installed (see the warning above)");
process.env[PG_TEST_URL_ENV] = await server.createDatabase();
