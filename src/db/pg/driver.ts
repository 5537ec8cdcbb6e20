/**
 * The `postgres` driver, configured so rows read the way SQLite's do: int8 and numeric as JS
 * numbers (ms times and counters, far below 2^53), JSON as its text (the sqlite-core mappers parse
 * it, as on SQLite), and booleans accepted as 0/1 too (Drizzle's sqlite-core binds them so).
 * Statement texts arrive with `?` placeholders and are numbered once per text.
 */
import net from "node:net";
import postgres from "postgres";
import { drizzle } from "drizzle-orm/sqlite-proxy";
import { SmithersError } from "../../errors/index.ts";
import { HeldRows } from "../combined-rows.ts";
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

/**
 * What the pool does about lost connections, unless the URL's query (or a `PG*` environment
 * variable, as postgres.js reads them) says otherwise: a connect that hangs gives up after 5 s
 * (postgres.js waits 30 s), a quiet socket is probed after 5 s, and reconnects back off to at most
 * 1 s (postgres.js counts every failed connect of the process and waits up to 20 s, so a 0.3 s
 * server restart with a busy pool cost half a minute). The DB retry policy retries above this.
 */
export const PG_DRIVER_DEFAULTS = { connect_timeout: 5, keep_alive: 5, max_reconnect_delay_s: 1 } as const;

/**
 * Session settings sent with every connection's start-up, so the server itself ends what a
 * vanished client left behind within seconds: a transaction idle for 10 s is rolled back (its row
 * and advisory locks freed) and its session ended, a statement stops after 30 s, and a silent peer
 * is probed by TCP keepalives (5 s idle, then every 2 s, dead after 3 unanswered). Schema work and
 * VACUUM lift the statement limit for their own transactions. A query parameter of the URL with the
 * same name wins (`postgres://…/db?statement_timeout=0&idle_in_transaction_session_timeout=60s`).
 * Start-up values beat ALTER ROLE/DATABASE … SET, so a deployment that sets these on the server
 * names them in the URL too.
 */
export const PG_SESSION_DEFAULTS = {
  idle_in_transaction_session_timeout: 10_000,
  statement_timeout: 30_000,
  tcp_keepalives_idle: 5,
  tcp_keepalives_interval: 2,
  tcp_keepalives_count: 3,
} as const;

/** Reconnect delay after `retries` failed connects, in seconds (postgres.js's unit): 50 ms doubling, capped, jittered. */
export function reconnectDelaySeconds(retries: number, random: () => number = Math.random): number {
  return (0.5 + random() / 2) * Math.min(0.05 * 2 ** retries, PG_DRIVER_DEFAULTS.max_reconnect_delay_s);
}

function queryParams(url: string): URLSearchParams {
  try {
    return new URL(url).searchParams;
  } catch {
    return new URLSearchParams();
  }
}

/** What a socket errors with after its owner let go of it: nobody is left to tell. */
function lateSocketError(): void {}

/**
 * postgres.js lets go of a closed connection's socket with `removeAllListeners()`, its `error`
 * listener included. Under Bun a socket whose connection the server reset (a restart, a killed
 * backend) can still emit `error` after that, and an `error` nobody listens to is thrown: an
 * uncaught ECONNRESET that ended a worker process (and failed test/e2e/pg-faults now and then).
 * So a socket that drops all its listeners keeps one that takes such a late error. Installed once,
 * when the PostgreSQL driver is first loaded; SQLite-only processes never load this module.
 */
function keepLateSocketErrorsCaught(): void {
  const proto = net.Socket.prototype as net.Socket & { smithersLateErrors?: true };
  if (proto.smithersLateErrors) return;
  const removeAll = proto.removeAllListeners;
  proto.removeAllListeners = function (this: net.Socket, event?: string | symbol) {
    const result = event === undefined ? removeAll.call(this) : removeAll.call(this, event);
    if (event === undefined || event === "error") this.on("error", lateSocketError);
    return result;
  };
  proto.smithersLateErrors = true;
}
keepLateSocketErrorsCaught();

const NO = new Set(["false", "disable", "0", "off", "no"]);
const YES = new Set(["true", "enable", "1", "on", "yes"]);

/**
 * Whether the client prepares its statements: `?prepare=` in the URL, else PGPREPARE, else yes.
 * Read here, not left to postgres.js, which keeps PGPREPARE's text as it is ("false" would prepare).
 */
export function preparesStatements(url: string): boolean {
  const raw = queryParams(url).get("prepare") ?? process.env.PGPREPARE;
  if (raw === undefined) return true;
  const value = raw.trim().toLowerCase();
  if (NO.has(value)) return false;
  if (YES.has(value)) return true;
  throw new SmithersError("INVALID_OPTION", `prepare (the URL's ?prepare= or PGPREPARE) must be true or false, got "${raw}"`, {
    option: "prepare",
    value: raw,
  });
}

/** A pooled client for `url`, with PG_DRIVER_DEFAULTS and PG_SESSION_DEFAULTS where the URL sets none. */
export function connect(url: string, options: PgClientOptions = {}): PgClient {
  const params = queryParams(url);
  // postgres.js lets an option given here beat the URL and the environment: pass only what neither names.
  const unless = <K extends string, V>(key: K, value: V): Partial<Record<K, V>> =>
    params.has(key) || process.env[`PG${key.toUpperCase()}`] !== undefined ? {} : ({ [key]: value } as Record<K, V>);
  return postgres(url, {
    max: options.max ?? 10,
    onnotice: () => {},
    types: TYPES,
    prepare: preparesStatements(url), // `?prepare=false` for a pooler that cannot keep a session's prepared statements
    ...unless("connect_timeout", PG_DRIVER_DEFAULTS.connect_timeout),
    ...unless("keep_alive", PG_DRIVER_DEFAULTS.keep_alive),
    ...unless("backoff", reconnectDelaySeconds),
    // The URL's own query parameters are start-up parameters too, and postgres.js lets them win over these.
    connection: { ...PG_SESSION_DEFAULTS, application_name: options.applicationName ?? "smithers" },
  });
}

/**
 * sqlite-core writes a many-column ON CONFLICT target with table-qualified names, which SQLite
 * accepts and PostgreSQL refuses (a conflict target names the inserted table's columns): the
 * qualifiers are dropped.
 */
export function unqualifiedConflictTarget(text: string): string {
  const at = text.indexOf("on conflict (");
  if (at === -1) return text;
  const open = at + "on conflict (".length;
  const close = text.indexOf(")", open);
  const target = text.slice(open, close).replace(/"(?:[^"]|"")*"\./g, "");
  return text.slice(0, open) + target + text.slice(close);
}

/** Distinct statement texts prepared on the server (each connection keeps its own, until postgres.js retires it); past it, texts run unnamed. */
const PREPARED_TEXTS_MAX = 1_024;
const preparedTexts = new Set<string>();

/**
 * Whether `text` runs as a named prepared statement. An unnamed one with parameters costs
 * postgres.js two round trips (it asks the server for the parameters' types first), a prepared
 * one only its first time on a connection. The texts are few and fixed (multi-row ones come in a
 * few sizes); the cap keeps texts with IN lists of every length from piling up on the server.
 */
function prepares(text: string): boolean {
  if (preparedTexts.has(text)) return true;
  if (preparedTexts.size >= PREPARED_TEXTS_MAX) return false;
  preparedTexts.add(text);
  return true;
}

/**
 * The Sql executor over a pool (autocommit statements) or over one open transaction. Over a
 * transaction, once a statement reported its connection lost, later statements fail with that
 * error without reaching postgres.js: a statement written to a closed connection of postgres.js
 * throws from a setImmediate (an uncaught TypeError, postgres.js #1066/#1208) and leaves that
 * connection unable to connect again.
 *
 * Over a transaction it also combines rows between `beginCombining` and `endCombining` (see
 * combined-rows.ts): the rows held go out, many per statement, pipelined with the statement
 * that comes next (postgres.js writes queries issued without awaiting one after the other on
 * the transaction's connection), so they cost no round trip of their own.
 */
export class PgSql implements Sql {
  readonly dialect = "postgres" as const;
  readonly orm: Orm;
  /** The connection-loss error this transaction's connection reported, if any. */
  lost: unknown;
  /** A multi-row upsert may not update one key twice here: such a row is written after those held. */
  private readonly held = new HeldRows(true);

  /** `transaction`: the executor of one open transaction, which remembers a lost connection. */
  constructor(
    private readonly client: PgClient | PgTransaction,
    private readonly transaction = false,
  ) {
    this.orm = drizzle(async (text, params, method) => {
      const text$ = numberPlaceholders(unqualifiedConflictTarget(text));
      if (method === "run") return { rows: [], changes: (await this.query(text$, params)).count } as { rows: unknown[] };
      const rows = (await this.query(text$, params, true)) as unknown as unknown[][];
      return { rows: method === "get" ? (rows[0] as unknown[]) : rows };
    }) as unknown as Orm;
  }

  /** From now until `endCombining`, rows of combinable texts are held (only over a transaction). */
  beginCombining(): void {
    if (this.transaction) this.held.start();
  }

  /** Writes the rows held and stops holding (before COMMIT). */
  async endCombining(): Promise<void> {
    this.held.stop();
    await this.flush();
  }

  async all<T>(text: string, ...params: unknown[]): Promise<T[]> {
    return (await this.query(numberPlaceholders(text), params)) as unknown as T[];
  }

  async get<T>(text: string, ...params: unknown[]): Promise<T | undefined> {
    const rows = await this.all<T>(text, ...params);
    return rows[0];
  }

  /** Runs a statement; a combinable one while combining is held and resolves with 1 (its one row). */
  async run(text: string, ...params: unknown[]): Promise<number> {
    if (this.held.hold(text, params)) return 1;
    return (await this.query(numberPlaceholders(text), params)).count;
  }

  async exec(text: string): Promise<void> {
    await this.query(text);
  }

  /**
   * Sends the rows held (if any), then `text` at once behind them. A held row's failure is the
   * error reported (the statement after it then only says the transaction is aborted).
   */
  private async query(text: string, params: unknown[] = [], asValues = false): Promise<postgres.RowList<postgres.Row[]>> {
    const flushed = this.flush();
    const own = this.unsafe(text, params, asValues);
    if (flushed !== undefined) {
      try {
        await flushed;
      } catch (error) {
        own.catch(() => undefined);
        throw error;
      }
    }
    return own;
  }

  /** Sends the statements that write the rows held; undefined when nothing is held. */
  private flush(): Promise<unknown> | undefined {
    if (this.held.isEmpty) return undefined;
    return Promise.all(this.held.take().map(([text, params]) => this.unsafe(numberPlaceholders(text), params)));
  }

  private async unsafe(text: string, params: unknown[] = [], asValues = false): Promise<postgres.RowList<postgres.Row[]>> {
    if (this.lost !== undefined) throw this.lost;
    const query = this.client.unsafe(text, params as postgres.ParameterOrJSON<never>[], { prepare: prepares(text) });
    try {
      return await (asValues ? (query.values() as unknown as typeof query) : query);
    } catch (error) {
      if (this.transaction && isConnectionLost(error)) this.lost ??= error;
      throw error;
    }
  }
}

/** The driver's or server's error code, also under Drizzle's query error, which keeps it as `cause`. */
export function pgCode(error: unknown): string | undefined {
  return pgErrorField(error, "code");
}

function pgErrorField(error: unknown, field: "code" | "routine"): string | undefined {
  for (let e = error, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const value = (e as Record<string, unknown>)[field];
    if (typeof value === "string") return value;
  }
  return undefined;
}

/**
 * A prepared statement the server no longer runs as prepared: its table changed shape under it
 * (another process migrated an output table) or it is gone. postgres.js forgets it and prepares
 * it afresh, by itself outside a transaction; inside one the transaction is aborted, and runs again.
 */
function isStalePreparedStatement(error: unknown): boolean {
  const routine = pgErrorField(error, "routine");
  return routine === "RevalidateCachedQuery" || routine === "FetchPreparedStatement";
}

/** Driver and server errors after which the connection is gone (the server ended the session, the socket closed, no connect). */
export function isConnectionLost(error: unknown): boolean {
  const code = pgCode(error);
  if (code === undefined) return false;
  return (
    code.startsWith("08") ||
    code === "57P01" || // admin_shutdown: pg_terminate_backend, a fast shutdown
    code === "57P02" || // crash_shutdown
    code === "57P03" || // cannot_connect_now: the server is starting or stopping
    code === "25P03" || // idle_in_transaction_session_timeout ended the session
    code === "ECONNRESET" ||
    code === "ECONNREFUSED" ||
    code === "EPIPE" ||
    code === "ETIMEDOUT" ||
    code === "CONNECTION_CLOSED" ||
    code === "CONNECTION_ENDED" ||
    code === "CONNECTION_DESTROYED" ||
    code === "CONNECT_TIMEOUT"
  );
}

/** PostgreSQL errors worth running again: serialization failures, deadlocks, lost or refused connections, a server shutting down, a stale prepared statement. */
export function isRetryablePgError(error: unknown): boolean {
  const code = pgCode(error);
  return code === "40001" || code === "40P01" || isConnectionLost(error) || isStalePreparedStatement(error);
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
