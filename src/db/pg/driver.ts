/**
 * The `postgres` driver, configured so rows read the way SQLite's do: int8 and numeric as JS
 * numbers (ms times and counters, far below 2^53), JSON as its text (the sqlite-core mappers parse
 * it, as on SQLite), and booleans accepted as 0/1 too (Drizzle's sqlite-core binds them so).
 * Statement texts arrive with `?` placeholders and are numbered once per text.
 */
import postgres from "postgres";
import { drizzle } from "drizzle-orm/sqlite-proxy";
import { numberPlaceholders, type Orm, type Sql } from "../sql.ts";

export type PgClient = postgres.Sql;
export type PgTransaction = postgres.TransactionSql;

const asNumber = (value: string) => Number(value);
const truthy = (value: unknown) => value === true || value === 1 || value === "1" || value === "t" || value === "true";
const jsonText = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value));

const TYPES = {
  int8: { to: 20, from: [20], serialize: (value: unknown) => String(value), parse: asNumber },
  numeric: { to: 1700, from: [1700], serialize: (value: unknown) => String(value), parse: asNumber },
  bool: { to: 16, from: [16], serialize: (value: unknown) => (truthy(value) ? "t" : "f"), parse: (value: string) => value === "t" },
  json: { to: 114, from: [114], serialize: jsonText, parse: (value: string) => value },
  jsonb: { to: 3802, from: [3802], serialize: jsonText, parse: (value: string) => value },
};

export type PgClientOptions = { max?: number; applicationName?: string };

/** A pooled client for `url`. */
export function connect(url: string, options: PgClientOptions = {}): PgClient {
  return postgres(url, {
    max: options.max ?? 10,
    onnotice: () => {},
    types: TYPES,
    prepare: true,
    connection: { application_name: options.applicationName ?? "smithers" },
  });
}

/**
 * sqlite-core writes an upsert's conflict target with its table (`on conflict ("t"."a", "t"."b")`);
 * SQLite accepts that, PostgreSQL rejects it as a syntax error and wants the bare column names.
 */
export function bareConflictTarget(text: string): string {
  return text.replace(/ on conflict \(([^)]*)\)/, (_, columns: string) => ` on conflict (${columns.replace(/"(?:[^"]|"")*"\./g, "")})`);
}

/** The Sql executor over a pool (autocommit statements) or over one open transaction. */
export class PgSql implements Sql {
  readonly dialect = "postgres" as const;
  readonly orm: Orm;

  constructor(private readonly client: PgClient | PgTransaction) {
    this.orm = drizzle(async (text, params, method) => {
      const query = this.client.unsafe(numberPlaceholders(bareConflictTarget(text)), params as postgres.ParameterOrJSON<never>[]);
      if (method === "run") return { rows: [], changes: (await query).count } as { rows: unknown[] };
      const rows = (await query.values()) as unknown[][];
      return { rows: method === "get" ? (rows[0] as unknown[]) : rows };
    }) as unknown as Orm;
  }

  async all<T>(text: string, ...params: unknown[]): Promise<T[]> {
    return (await this.client.unsafe(numberPlaceholders(text), params as postgres.ParameterOrJSON<never>[])) as unknown as T[];
  }

  async get<T>(text: string, ...params: unknown[]): Promise<T | undefined> {
    const rows = await this.all<T>(text, ...params);
    return rows[0];
  }

  async run(text: string, ...params: unknown[]): Promise<number> {
    return (await this.client.unsafe(numberPlaceholders(text), params as postgres.ParameterOrJSON<never>[])).count;
  }

  async exec(text: string): Promise<void> {
    await this.client.unsafe(text);
  }
}

/** PostgreSQL errors worth running again: serialization failures, deadlocks, lost or refused connections, a server shutting down. */
export function isRetryablePgError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return false;
  return (
    code === "40001" ||
    code === "40P01" ||
    code.startsWith("08") ||
    code === "57P01" ||
    code === "57P03" ||
    code === "ECONNRESET" ||
    code === "ECONNREFUSED" ||
    code === "CONNECTION_CLOSED" ||
    code === "CONNECTION_ENDED" ||
    code === "CONNECTION_DESTROYED" ||
    code === "CONNECT_TIMEOUT"
  );
}

/** The URL with its password replaced, for messages and `db.path`. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "postgres://(unparsable URL)";
  }
}
