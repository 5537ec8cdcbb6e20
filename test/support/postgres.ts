/**
 * PostgreSQL for tests: one real server per `bun test` process, started on first use, and a
 * fresh database per test. Where PostgreSQL cannot be installed at all, the tests skip with one
 * loud warning instead of failing; a server that is installed but fails to start fails them.
 *
 * @example
 * const pg = await pgTestServer();
 * describe.skipIf(!pg)("my pg adapter", () => {
 *   test("…", async () => {
 *     const sql = connectPg(await pg!.createDatabase());
 *     …
 *   });
 * });
 */
import postgres from "postgres";
import { ensurePgvector, ensurePostgresBinDir } from "../../scripts/postgres/binaries.ts";
import { type PostgresServer, startPostgres } from "../../scripts/postgres/server.ts";

export { type PostgresServer, type PostgresServerOptions, startPostgres } from "../../scripts/postgres/server.ts";

let shared: Promise<PostgresServer | undefined> | undefined;

/**
 * The test run's server, or undefined (after one warning) when no PostgreSQL can be installed.
 * Stopped when the process exits; tests must not stop it.
 */
export function pgTestServer(): Promise<PostgresServer | undefined> {
  shared ??= (async () => {
    const found = ensurePostgresBinDir();
    if (!found.found) {
      console.warn(`\n!!! PostgreSQL tests SKIPPED: ${found.reason}. Run scripts/postgres/ensure.sh as root to install it. !!!\n`);
      return undefined;
    }
    // Memory's pgvector path is tested with the real extension; without it those tests fail and say why.
    const pgvector = ensurePgvector(found.binDir);
    if (pgvector) console.warn(`\n!!! ${pgvector}: the pgvector tests will fail. Run scripts/postgres/ensure-pgvector.sh as root. !!!\n`);
    return startPostgres();
  })();
  return shared;
}

/** int8 as a JS number: postgres.js returns it as a string by default; our int8 values are ms times and counters, well within 2^53. */
export const INT8_AS_NUMBER = { to: 20, from: [20], serialize: (value: number) => String(value), parse: (value: string) => Number(value) };

/** A postgres.js client for a test database: quiet about notices, int8 read as numbers. Call `end()` when done. */
export function connectPg(url: string, options: { max?: number } = {}) {
  return postgres(url, { max: options.max ?? 4, onnotice: () => {}, types: { int8: INT8_AS_NUMBER } });
}
