import { Database } from "bun:sqlite";
import { test } from "bun:test";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { numberPlaceholders, SqliteDb, type SmithersDb } from "../src/db/index.ts";
import { INT8_AS_NUMBER } from "./support/postgres.ts";

/**
 * The storage backend the suite runs on: SQLite unless `SMITHERS_TEST_BACKEND=postgres` (with
 * test/support/pg-preload.ts preloaded, which starts the server). Tests that take a database from
 * `tempDbPath()` and read it with `query()` run unchanged on either.
 */
export const backend: "sqlite" | "postgres" = process.env.SMITHERS_TEST_BACKEND === "postgres" ? "postgres" : "sqlite";
export const onPostgres = backend === "postgres";

/** A fresh empty directory under the system temp directory, for files a test writes beside its database. */
export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), "smithers-test-"));
}

let schemas = 0;

/**
 * A fresh database: on SQLite a path in its own temp directory; on PostgreSQL a URL to the pass's
 * shared test database with a schema of its own (`?search_path=t_<pid>_<n>`, which PgDb creates).
 */
export function tempDbPath(name = "smithers.db"): string {
  if (!onPostgres) return join(tempDir(), name);
  const base = process.env.SMITHERS_TEST_PG_URL;
  if (!base) throw new Error("SMITHERS_TEST_BACKEND=postgres needs --preload ./test/support/pg-preload.ts to start the server");
  return `${base}?search_path=t_${process.pid}_${++schemas}`;
}

/** The SQLite implementation behind `db`, for SQLite-only tests (raw connection, sync Drizzle); throws on another backend. */
export function sqliteOf(db: SmithersDb): SqliteDb {
  if (!(db instanceof SqliteDb)) throw new Error(`expected a SQLite database, got ${db.dialect} at ${db.path}`);
  return db;
}

/**
 * `test`, skipped on PostgreSQL because what it checks exists only on SQLite (the reason says
 * what, and is printed once per skipped test so the pass's output lists them).
 */
export function sqliteOnly(reason: string): typeof test {
  if (!onPostgres) return test;
  return ((name: string, ..._rest: unknown[]) => {
    console.info(`[skipped on postgres] ${name}: ${reason}`);
    test.skip(name, () => {});
  }) as unknown as typeof test;
}

/** Runs a read-only SQL query against a SQLite database file (SQLite only; engine tests use `query`). */
export function sql<T = Record<string, unknown>>(dbPath: string, query: string, ...params: (string | number | null)[]): T[] {
  const db = new Database(dbPath, { readonly: true });
  try {
    return db.query(query).all(...params) as T[];
  } finally {
    db.close();
  }
}

type Param = string | number | null;

/** jsonb gives its text back with a space after each comma and colon; SQLite keeps JSON.stringify's compact text. */
const compactJson = (text: string) => JSON.stringify(JSON.parse(text));

/** Rows read the way bun:sqlite reads them: booleans as 0/1, int8 and numeric as numbers, JSON as its text. */
const PG_AS_SQLITE = {
  int8: INT8_AS_NUMBER,
  numeric: { to: 1700, from: [1700], serialize: (value: number) => String(value), parse: (value: string) => Number(value) },
  bool: { to: 16, from: [16], serialize: (value: unknown) => (value ? "t" : "f"), parse: (value: string) => (value === "t" ? 1 : 0) },
  json: { to: 114, from: [114], serialize: (value: unknown) => String(value), parse: compactJson },
  jsonb: { to: 3802, from: [3802], serialize: (value: unknown) => String(value), parse: compactJson },
};

const connectTestPg = (url: string) => postgres(url, { max: 2, onnotice: () => {}, types: PG_AS_SQLITE });

/** One client per test database, shared by every schema in it (the statement sets its search_path). */
const pgClients = new Map<string, ReturnType<typeof connectTestPg>>();

/**
 * Runs `text` (with `?` placeholders) in the schema a tempDbPath URL names; `create` makes the
 * schema first, as opening a SQLite file for writing creates the file.
 */
async function onPgSchema(url: string, text: string, params: Param[], create = false): Promise<Record<string, unknown>[]> {
  const parsed = new URL(url);
  const schema = parsed.searchParams.get("search_path");
  parsed.search = "";
  const base = parsed.toString();
  const client = pgClients.get(base) ?? connectTestPg(base);
  pgClients.set(base, client);
  const rows = await client.begin(async (tx) => {
    const quoted = schema && `"${schema.replaceAll('"', '""')}"`;
    if (quoted && create) await tx.unsafe(`CREATE SCHEMA IF NOT EXISTS ${quoted}`);
    if (quoted) await tx.unsafe(`SET LOCAL search_path TO ${quoted}`);
    return tx.unsafe(numberPlaceholders(text), params);
  });
  return [...rows] as Record<string, unknown>[];
}

/**
 * Reads a test database on either backend, rows as bun:sqlite gives them (SQLite opens the file
 * read-only). Write the query in SQL both dialects accept.
 * @example expect(await query(dbPath, "SELECT status FROM _smithers_runs")).toEqual([{ status: "finished" }]);
 */
export async function query<T = Record<string, unknown>>(dbPath: string, text: string, ...params: Param[]): Promise<T[]> {
  if (onPostgres) return (await onPgSchema(dbPath, text, params)) as T[];
  return sql<T>(dbPath, text, ...params);
}

/**
 * Runs a statement that changes a test database (the test's own set-up: corrupting a row,
 * rewinding a run as a crash leaves it), on either backend.
 */
export async function execute(dbPath: string, text: string, ...params: Param[]): Promise<void> {
  if (onPostgres) {
    await onPgSchema(dbPath, text, params, true);
    return;
  }
  const db = new Database(dbPath);
  try {
    db.query(text).run(...params);
  } finally {
    db.close();
  }
}

/** Whether anything created the test database yet: the SQLite file, or the PostgreSQL schema the URL names. */
export async function databaseExists(dbPath: string): Promise<boolean> {
  if (!onPostgres) return existsSync(dbPath);
  const schema = new URL(dbPath).searchParams.get("search_path");
  const base = new URL(dbPath);
  base.search = "";
  return (await query(base.toString(), "SELECT 1 FROM information_schema.schemata WHERE schema_name = ?", schema)).length > 0;
}

/** Each column of `table` with its declared type, lower case (SQLite's declared type, PostgreSQL's data_type). */
export async function columnTypes(dbPath: string, table: string): Promise<Record<string, string>> {
  const text = onPostgres
    ? "SELECT column_name AS name, data_type AS type FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?"
    : "SELECT name, type FROM pragma_table_info(?)";
  return Object.fromEntries((await query<{ name: string; type: string }>(dbPath, text, table)).map((c) => [c.name, c.type.toLowerCase()]));
}

/** The names of the indexes in a test database. */
export async function indexNames(dbPath: string): Promise<string[]> {
  const text = onPostgres
    ? "SELECT indexname AS name FROM pg_indexes WHERE schemaname = current_schema() ORDER BY 1"
    : "SELECT name FROM sqlite_master WHERE type = 'index' ORDER BY 1";
  return (await query<{ name: string }>(dbPath, text)).map((r) => r.name);
}

/** Resolves once `db` has created its tables (PostgreSQL does that in the background; SQLite already has). */
export function tablesReady(db: SmithersDb): Promise<void> {
  return db.read("test: tables ready", () => undefined);
}

let triggers = 0;

/**
 * Makes the database refuse inserts into `table` (those whose row matches `when`, a condition on
 * NEW both dialects read the same way), as a full disk or a constraint would; resolves with the
 * function that lifts the refusal. The error message contains "refused".
 */
export async function refuseInserts(dbPath: string, table: string, when?: string): Promise<() => Promise<void>> {
  const name = `refuse_${++triggers}`;
  if (onPostgres) {
    await execute(dbPath, `CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION '${table} refused'; END $$`);
    await execute(dbPath, `CREATE TRIGGER ${name} BEFORE INSERT ON "${table}" FOR EACH ROW ${when ? `WHEN (${when})` : ""} EXECUTE FUNCTION ${name}()`);
    return () => execute(dbPath, `DROP TRIGGER ${name} ON "${table}"`);
  }
  await execute(dbPath, `CREATE TRIGGER ${name} BEFORE INSERT ON "${table}" ${when ? `WHEN ${when}` : ""} BEGIN SELECT RAISE(ABORT, '${table} refused'); END`);
  return () => execute(dbPath, `DROP TRIGGER ${name}`);
}

export type Thrown = Error & { code?: unknown; details?: Record<string, unknown> };

/** The value `fn` throws; fails the test if it returns. */
export function errorOf<T = Thrown>(fn: () => unknown): T {
  try {
    fn();
  } catch (error) {
    return error as T;
  }
  throw new Error("expected a throw");
}

/** The value `promise` rejects with; fails the test if it resolves. */
export async function rejection<T = Thrown>(promise: Promise<unknown>): Promise<T> {
  try {
    await promise;
  } catch (error) {
    return error as T;
  }
  throw new Error("expected a rejection");
}

/** Resolves after `ms`, or at once when `signal` aborts: a task body that honours its stop. */
export function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

/** mulberry32: a small seeded generator, the same sequence for the same seed (kill schedules a failing test can replay). */
export function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Polls `check` (which may query the database) every 20 ms until it holds; throws after `ms`. */
export async function waitFor(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await Bun.sleep(20);
  }
}

/** The statement texts a SQLite SmithersDb runs from now on, in order (its executor's statement lookup, spied on). */
export function statementsRun(db: SmithersDb): string[] {
  const texts: string[] = [];
  const { sql } = sqliteOf(db);
  const statement = sql.statement.bind(sql);
  sql.statement = (text: string) => {
    texts.push(text);
    return statement(text);
  };
  return texts;
}
