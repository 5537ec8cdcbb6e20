/**
 * The one way adapters speak SQL, whatever the backend: statement texts with positional `?`
 * placeholders, run on SQLite (bun:sqlite, statements prepared once per connection) or
 * PostgreSQL (the `postgres` driver, `?` numbered `$1…` once per text). Texts are written to
 * mean the same on both; where the dialects differ an adapter keeps one text per dialect
 * (`perDialect`).
 */
import type { SqliteRemoteDatabase } from "drizzle-orm/sqlite-proxy";

export const DIALECTS = ["sqlite", "postgres"] as const;
export type Dialect = (typeof DIALECTS)[number];

/**
 * A Drizzle query builder over the same connection, for statements whose rows Drizzle maps
 * (booleans, field names). Always awaited: SQLite answers at once, PostgreSQL later. Built with
 * sqlite-core on both backends; the PostgreSQL executor runs its texts with `?` numbered.
 */
export type Orm = SqliteRemoteDatabase<Record<string, never>>;

export interface Sql {
  readonly dialect: Dialect;
  readonly orm: Orm;
  /** Every row the statement returns (column names as the statement spells them). */
  all<T = Record<string, unknown>>(text: string, ...params: unknown[]): Promise<T[]>;
  /** The first row, or undefined. */
  get<T = Record<string, unknown>>(text: string, ...params: unknown[]): Promise<T | undefined>;
  /** Runs a statement; resolves with the number of rows it changed. */
  run(text: string, ...params: unknown[]): Promise<number>;
  /** Runs statement text without parameters (schema changes); may hold several statements on SQLite only. */
  exec(text: string): Promise<void>;
}

/** One value per dialect, built once: for statement texts that must differ between the two. */
export function perDialect<T>(build: (dialect: Dialect) => T): Readonly<Record<Dialect, T>> {
  return { sqlite: build("sqlite"), postgres: build("postgres") };
}

/** `a IS b` on SQLite, `a IS NOT DISTINCT FROM b` on PostgreSQL: equality where NULL matches NULL. */
export function nullSafeEq(dialect: Dialect): string {
  return dialect === "postgres" ? "IS NOT DISTINCT FROM" : "IS";
}

/** The smaller of two values (SQLite's two-argument min(), PostgreSQL's least()). */
export function smaller(dialect: Dialect, a: string, b: string): string {
  return dialect === "postgres" ? `least(${a}, ${b})` : `min(${a}, ${b})`;
}

/** The text of a top-level key of a JSON text column. */
export function jsonField(dialect: Dialect, column: string, key: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) throw new Error(`jsonField: unsafe key ${key}`);
  return dialect === "postgres" ? `(${column}::jsonb ->> '${key}')` : `json_extract(${column}, '$.${key}')`;
}

const numbered = new Map<string, string>();
/** Texts kept numbered; past it the cache starts over (texts with IN lists of every length would otherwise pile up in a long-lived worker). */
const NUMBERED_CACHE_MAX = 4_096;

/**
 * `?` placeholders numbered `$1, $2, …` for PostgreSQL, once per text. A `?` inside a quoted
 * string or identifier is left alone.
 */
export function numberPlaceholders(text: string): string {
  let found = numbered.get(text);
  if (found !== undefined) return found;
  let out = "";
  let n = 0;
  let quote: string | undefined;
  for (const ch of text) {
    if (quote) {
      if (ch === quote) quote = undefined;
      out += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      out += ch;
    } else out += ch === "?" ? `$${++n}` : ch;
  }
  found = out;
  if (numbered.size >= NUMBERED_CACHE_MAX) numbered.clear();
  numbered.set(text, found);
  return found;
}
