/**
 * The soak's own view of the database, beside the processes under test: a few read-only SQL
 * queries, written once with `?` placeholders, on a SQLite file or a PostgreSQL URL. A throwaway
 * PostgreSQL server is started here for `--db postgres`.
 */
import { Database } from "bun:sqlite";
import postgres from "postgres";
import { ensurePostgresBinDir } from "../../scripts/postgres/binaries.ts";
import { startPostgres, type PostgresServer } from "../../scripts/postgres/server.ts";

export type Backend = "sqlite" | "postgres";

export type Store = {
  /** What every process gets as `--db`: the SQLite file or the postgres:// URL. */
  target: string;
  backend: Backend;
  /** Rows of a read-only query; numbers come back as numbers on both backends. */
  all<T = Record<string, unknown>>(query: string, ...params: unknown[]): Promise<T[]>;
  close(): Promise<void>;
};

/** int8 (ms times, counts) as a JS number; postgres.js returns a string by default. */
const INT8_AS_NUMBER = { to: 20, from: [20], serialize: (v: number) => String(v), parse: (v: string) => Number(v) };

/** `?` placeholders as PostgreSQL's `$1, $2 …` (the soak's queries hold no `?` inside strings). */
function numbered(query: string): string {
  let n = 0;
  return query.replace(/\?/g, () => `$${++n}`);
}

/**
 * A read connection to `target`. SQLite: the file must exist (the first `smithers` process makes
 * it); opened read-only so the soak never takes the write lock the processes under test contend for.
 */
export function openStore(backend: Backend, target: string): Store {
  if (backend === "sqlite") {
    let db: Database | undefined;
    return {
      target,
      backend,
      all: async <T>(query: string, ...params: unknown[]) => {
        db ??= new Database(target, { readonly: true });
        db.exec("PRAGMA busy_timeout = 5000");
        return db.query(query).all(...(params as never[])) as T[];
      },
      close: async () => db?.close(),
    };
  }
  const sql = postgres(target, { max: 2, onnotice: () => {}, types: { int8: INT8_AS_NUMBER }, connect_timeout: 5, idle_timeout: 30 });
  return {
    target,
    backend,
    all: async <T>(query: string, ...params: unknown[]) => (await sql.unsafe(numbered(query), params as never[])) as unknown as T[],
    close: () => sql.end({ timeout: 5 }),
  };
}

/** A fresh PostgreSQL server (scripts/postgres) and an empty database on it; stop() removes both. */
export async function startSoakPostgres(): Promise<{ url: string; server: PostgresServer }> {
  const found = ensurePostgresBinDir();
  if (!found.found) throw new Error(`--db postgres needs PostgreSQL: ${found.reason} (scripts/postgres/ensure.sh installs it as root)`);
  const server = await startPostgres({ maxConnections: 200 });
  return { url: await server.createDatabase("soak"), server };
}
