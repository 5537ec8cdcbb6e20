/**
 * PgDb: the PostgreSQL implementation of SmithersDb. A pool of connections; each transaction runs
 * on one of them at READ COMMITTED, and the statements that need more take it: a run's sequences
 * (events, signals, tool calls) under a per-run advisory lock, the owner check of a step under a
 * row lock on its run (FOR UPDATE), claims with FOR UPDATE SKIP LOCKED. Schema work (the
 * internal tables, output tables) runs first, and every other operation waits for it: a look at
 * the catalogs, and only when something is missing, the DDL under one advisory lock across
 * processes (so opening a current database takes no lock at all).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { getTableConfig } from "drizzle-orm/pg-core";
import { SmithersError } from "../../errors/index.ts";
import { DB_RETRY_POLICY, DEFAULT_DURABILITY, type DbRetryPolicy, type Durability } from "../constants.ts";
import { decidedGateBackfill, RETIRED_INDEXES } from "../ensure.ts";
import { quoteIdentifier } from "../ddl.ts";
import type { MigrationReport, OutputTableInfo } from "../output-tables.ts";
import { withSqliteWriteRetry } from "../retry.ts";
import { checkDurability } from "../smithers-db.ts";
import type { Sql } from "../sql.ts";
import type { SmithersDb, SmithersDbOptions, StorageSize } from "../store.ts";
import { liveColumns } from "../schema-signature.ts";
import { addPgColumnStatement, createPgTableStatements } from "./ddl.ts";
import { connect, isConnectionLost, isRetryablePgError, pgCode, PgSql, redactUrl, type PgClient, type PgClientOptions } from "./driver.ts";
import { pgSchemaCurrent } from "./schema-check.ts";
import { pgInternalTables, toPgTable } from "./tables.ts";

type TxToken = { readonly db: PgDb; readonly label: string; readonly q: PgSql; readonly onCommit: (() => void)[]; readonly onRollback: (() => void)[] };

const txContext = new AsyncLocalStorage<TxToken>();

/** How long close() waits for schema work, then for queries in flight, in seconds. */
const CLOSE_TIMEOUT_S = 5;
const FALSE = () => false;

/** The advisory lock every process takes for schema changes (key space 0). */
const SCHEMA_LOCK = "SELECT pg_advisory_xact_lock(0, 0)";
/** Schema changes and VACUUM take as long as the tables' size needs: the session's statement_timeout does not apply. */
const NO_STATEMENT_TIMEOUT = "SET LOCAL statement_timeout = 0";
/** Connection errors of a connect that never got a session: no statement was in flight, the pool stays. */
const NOTHING_IN_FLIGHT = new Set(["ECONNREFUSED", "57P03"]);
/** How long a transaction whose connection reported a loss waits for postgres.js to see the close before failing anyway. */
const LOST_CONNECTION_GRACE_MS = 1_000;

export type PgDbOptions = SmithersDbOptions & PgClientOptions;

export class PgDb implements SmithersDb {
  readonly dialect = "postgres" as const;
  readonly syncReads = false;
  readonly path: string;
  /** The pool now in use; replaced when a connection is lost with work in flight (see replacePool). */
  get client(): PgClient {
    return this.pool.client;
  }
  get target(): string {
    return this.url;
  }
  /** Autocommit statements on the pool. */
  get sql(): PgSql {
    return this.pool.sql;
  }
  private pool: { client: PgClient; sql: PgSql };
  /** LISTEN's own client, never replaced: postgres.js listens again after a reconnect by itself. */
  private listener: PgClient | undefined;
  private readonly retryPolicy: DbRetryPolicy;
  private readonly clientOptions: PgClientOptions;
  private mode: Durability;
  private fullCommits = 0;
  /** Schema work still to finish; every operation waits for it (and fails with its error). */
  private ready: Promise<void>;
  private closing: Promise<void> | undefined;
  /** Openers sharing this pool (openSmithersDb): close() ends it when the last of them does. */
  private holders = 1;

  constructor(
    readonly url: string,
    options: PgDbOptions = {},
  ) {
    this.path = redactUrl(url);
    this.mode = checkDurability(options.durability ?? DEFAULT_DURABILITY);
    this.retryPolicy = options.retryPolicy ?? DB_RETRY_POLICY;
    this.clientOptions = options;
    const client = connect(url, options);
    this.pool = { client, sql: new PgSql(client) };
    const schema = searchPathSchema(url);
    this.ready =
      options.ensureTables === false
        ? Promise.resolve()
        : this.schemaWork(
            "ensureSmithersTables",
            async (q) => {
              if (schema) await q.exec(`CREATE SCHEMA IF NOT EXISTS ${quoteIdentifier(schema)}`);
              await ensurePgSmithersTables(q);
            },
            async (q) => ((await pgSchemaCurrent(q, schema)) ? { done: undefined } : undefined),
          );
    // The first contact failing is the URL or the server, not a busy database: DB_UNREACHABLE.
    this.ready = this.ready.catch((error: unknown) => {
      throw firstContactError(this.path, error);
    });
    // A failure is reported by the first operation that waits for it, not as an unhandled rejection.
    this.ready.catch(() => undefined);
  }

  /**
   * Both durability modes commit the same way here: a commit returns once the server wrote its
   * WAL as the server's `synchronous_commit` says (on by default: it survives power loss).
   */
  get durability(): Durability {
    return this.mode;
  }

  get durableCommits(): number {
    return this.fullCommits;
  }

  async setDurability(durability: Durability): Promise<void> {
    this.mode = checkDurability(durability);
  }

  inTransaction(): boolean {
    const token = txContext.getStore();
    return token !== undefined && token.db === this;
  }

  afterTransaction(commit: () => void, rollback?: () => void): void {
    const token = txContext.getStore();
    if (!token || token.db !== this) throw new SmithersError("DB_NESTED_TRANSACTION", "afterTransaction must be called inside a transaction");
    token.onCommit.push(commit);
    if (rollback) token.onRollback.push(rollback);
  }

  read<T>(label: string, fn: (q: Sql) => T | Promise<T>): Promise<T> {
    const token = this.openToken();
    if (token) return Promise.resolve().then(() => fn(token.q));
    return this.whenReady(() => this.retry(label, async () => fn(this.sql)));
  }

  write<T>(label: string, fn: (q: Sql) => T | Promise<T>): Promise<T> {
    return this.read(label, fn);
  }

  withTransaction<T>(label: string, fn: (q: Sql) => T | Promise<T>): Promise<T> {
    const token = this.openToken();
    if (token) {
      return Promise.reject(
        new SmithersError("DB_NESTED_TRANSACTION", `Transaction "${label}" was opened inside transaction "${token.label}"`, { label, outer: token.label }),
      );
    }
    return this.whenReady(() => this.retry(label, () => this.runTransaction(label, fn)));
  }

  async durableTransaction<T>(label: string, fn: (q: Sql) => T | Promise<T>): Promise<T> {
    const result = await this.withTransaction(label, fn);
    this.fullCommits++;
    return result;
  }

  /** Creates and forward-migrates output tables before any later operation runs. */
  ensureOutputTables(infos: readonly OutputTableInfo[]): Promise<MigrationReport> {
    const report = this.schemaWork(
      "ensureOutputTables",
      async (q) => {
        const plan = await planPgOutputTables(q, infos);
        for (const statement of plan.statements) await q.exec(statement);
        return plan.report;
      },
      async (q) => {
        const plan = await planPgOutputTables(q, infos);
        return plan.statements.length === 0 ? { done: plan.report } : undefined;
      },
    );
    this.ready = report.then(() => undefined);
    this.ready.catch(() => undefined);
    return report;
  }

  /** PostgreSQL manages its write-ahead log itself. */
  async checkpoint(): Promise<void> {}

  storageSize(): Promise<StorageSize> {
    return this.read("storageSize", async (q) => {
      const row = await q.get<{ bytes: number }>("SELECT pg_database_size(current_database()) AS bytes");
      return { fileBytes: Number(row?.bytes ?? 0), freeBytes: 0 };
    });
  }

  /** VACUUM of the Smithers tables (space inside them becomes reusable; the server decides what goes back to the disk). */
  vacuum(): Promise<void> {
    return this.whenReady(async () => {
      // VACUUM cannot run in a transaction (no SET LOCAL): a connection of its own without the session's statement limit.
      const url = new URL(this.url);
      url.searchParams.set("statement_timeout", "0");
      const maintenance = connect(url.toString(), { max: 1, applicationName: "smithers-vacuum" });
      try {
        for (const table of Object.values(pgInternalTables)) await maintenance.unsafe(`VACUUM "${getTableConfig(table).name}"`);
      } finally {
        await maintenance.end({ timeout: 5 });
      }
    });
  }

  get isClosed(): boolean {
    return this.closing !== undefined;
  }

  retain(): this {
    if (this.closing) throw new SmithersError("DB_CLOSED", `Database ${this.path} is closed`);
    this.holders++;
    return this;
  }

  /** LISTEN on a connection postgres.js keeps for it (and re-listens on after a reconnect). */
  listen(channel: string, onMessage: (payload: string) => void): Promise<() => Promise<void>> {
    return this.whenReady(async () => {
      this.listener ??= connect(this.url, { ...this.clientOptions, max: 1 });
      const { unlisten } = await this.listener.listen(channel, onMessage);
      return unlisten;
    });
  }

  /**
   * Lets the schema work already started finish first (as on SQLite, where opening migrates at
   * once, a database opened and closed straight away has its tables; up to CLOSE_TIMEOUT_S), then
   * ends the pool.
   */
  close(): Promise<void> {
    if (this.holders > 1) {
      this.holders--;
      return Promise.resolve();
    }
    // Schema work gets a while to finish; a server that does not answer it (a partition) does not
    // hold the close for ever, and then neither do the queries waiting behind it.
    const gaveUp = new Promise<boolean>((done) => setTimeout(() => done(true), CLOSE_TIMEOUT_S * 1000).unref());
    this.closing ??= Promise.race([this.ready.then(FALSE, FALSE), gaveUp])
      .then((stuck) => {
        const timeout = stuck ? 0 : CLOSE_TIMEOUT_S;
        return Promise.all([this.client.end({ timeout }), this.listener?.end({ timeout })]);
      })
      .then(() => undefined);
    return this.closing;
  }

  private openToken(): TxToken | undefined {
    const token = txContext.getStore();
    return token && token.db === this ? token : undefined;
  }

  private whenReady<T>(run: () => Promise<T>): Promise<T> {
    if (this.closing) return Promise.reject(new SmithersError("DB_CLOSED", `Database ${this.path} is closed`));
    return this.ready.then(run);
  }

  /**
   * Schema work after the schema work before it: `current` looks without a lock and answers when
   * there is nothing to do; otherwise `fn` runs in a transaction of its own under the schema lock.
   */
  private schemaWork<T>(label: string, fn: (q: Sql) => Promise<T>, current: (q: Sql) => Promise<{ done: T } | undefined>): Promise<T> {
    const previous = this.ready ?? Promise.resolve();
    return previous.then(async () => {
      const looked = await this.retry(label, () => current(this.sql));
      if (looked) return looked.done;
      return this.retry(
        label,
        () =>
          this.client.begin(async (tx) => {
            const q = new PgSql(tx, true);
            await q.exec(NO_STATEMENT_TIMEOUT);
            await q.exec(SCHEMA_LOCK);
            return fn(q);
          }) as Promise<T>,
      );
    });
  }

  private retry<T>(label: string, operation: () => Promise<T>): Promise<T> {
    const watched = async () => {
      const pool = this.pool;
      try {
        return await operation();
      } catch (error) {
        if (isConnectionLost(error) && !NOTHING_IN_FLIGHT.has(pgCode(error) ?? "")) this.replacePool(pool);
        throw error;
      }
    };
    return withSqliteWriteRetry(label, watched, this.retryPolicy, 0, isRetryablePgError);
  }

  /**
   * A connection of postgres.js that closes while a write of it waits for its setImmediate keeps
   * that write and never sends its start-up message again: each later connect of it times out
   * (postgres.js #1066, #1154, #1208). From outside no such connection can be told apart, so a
   * connection lost with work in flight retires the whole pool; its healthy connections finish
   * what they run, and the retry goes to a new pool. Each pool is retired once.
   */
  private replacePool(failed: { client: PgClient; sql: PgSql }): void {
    if (failed !== this.pool || this.closing) return;
    const client = connect(this.url, this.clientOptions);
    this.pool = { client, sql: new PgSql(client) };
    failed.client.end({ timeout: 5 }).catch(() => undefined);
  }

  /**
   * One try of a transaction. A connection lost before COMMIT was sent leaves nothing behind: the
   * retry policy runs the whole transaction again. Lost after it (no answer to COMMIT), the server
   * is asked whether the transaction's id committed: committed is success, aborted is retried,
   * anything else is DB_UNAVAILABLE and not retried, so nothing is ever applied twice.
   */
  private async runTransaction<T>(label: string, fn: (q: Sql) => T | Promise<T>): Promise<T> {
    let token: TxToken | undefined;
    let settled = false;
    /** Known once fn finished: the transaction's id, for txid_status when its COMMIT goes unanswered. */
    let xid: string | null | undefined;
    let value: T | undefined;
    try {
      const begun = this.client.begin(async (tx) => {
        const own: TxToken = { db: this, label, q: new PgSql(tx, true), onCommit: [], onRollback: [] };
        token = own;
        // Sent first and pipelined with fn's statements on this connection: it costs no round trip of its own.
        const xidRead = own.q.get<{ xid: string }>("SELECT txid_current()::text AS xid");
        xidRead.catch(() => undefined); // fn's own statements report a failure of this connection
        try {
          own.q.beginCombining();
          value = await txContext.run(own, () => fn(own.q));
          await own.q.endCombining(); // the rows held for multi-row statements, before COMMIT
          xid = (await xidRead)?.xid ?? null;
          return value;
        } catch (error) {
          if (own.q.lost === undefined && !isConnectionLost(error)) throw error;
          // postgres.js answers a failure with a ROLLBACK on this connection, which, closed, would
          // throw from a setImmediate (see PgSql). begin() fails by itself once the connection
          // closes, so the failure is held back until then, or passed on if it stays open.
          return new Promise<never>((_, reject) => {
            setTimeout(() => settled || reject(error), LOST_CONNECTION_GRACE_MS).unref();
          });
        }
      });
      // Rejected because the connection closed: whatever fn still sends must not reach that connection.
      begun.catch((error: unknown) => token && (token.q.lost ??= error));
      const result = (await begun.finally(() => (settled = true))) as T;
      for (const hook of token?.onCommit ?? []) hook();
      return result;
    } catch (error) {
      let failure = error;
      if (xid !== undefined && isConnectionLost(error)) {
        const outcome = xid === null ? "aborted" : await this.commitOutcome(xid).catch(() => null);
        if (outcome === "committed") {
          for (const hook of token?.onCommit ?? []) hook();
          return value as T;
        }
        if (outcome !== "aborted") {
          failure = new SmithersError("DB_UNAVAILABLE", `${label}: the connection was lost during COMMIT and the server cannot tell whether it committed`, {
            cause: error,
            label,
          });
        }
      }
      for (const hook of token?.onRollback ?? []) {
        try {
          hook();
        } catch {
          // the caller sees the error that rolled the transaction back, not a hook's
        }
      }
      throw failure;
    }
  }

  /** What became of a transaction whose COMMIT went unanswered (txid_status; 'in progress' while its backend still ends). */
  private async commitOutcome(xid: string): Promise<string | null> {
    for (let ask = 0; ; ask++) {
      const row = await this.retry("commitOutcome", () => this.sql.get<{ status: string | null }>("SELECT txid_status(?::bigint) AS status", xid));
      const status = row?.status ?? null;
      if (status !== "in progress" || ask >= 20) return status;
      await Bun.sleep(50);
    }
  }
}

/** Errors of a connect that never got a session: the server is down or unknown, or turned the login away. */
const NO_SERVER = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "ETIMEDOUT", "CONNECT_TIMEOUT", "57P03"]);

/**
 * DB_UNREACHABLE for a first contact that failed for want of a server or a login (after the retry
 * policy's tries: a server still starting gets those), saying what to fix; any other error as it is.
 */
export function firstContactError(url: string, error: unknown): unknown {
  const root = SmithersError.is(error) && error.code === "DB_WRITE_FAILED" ? error.cause : error;
  const code = pgCode(root) ?? "";
  const told = (root as Error)?.message ?? String(root);
  const said = told.includes(code) ? told : `${code}: ${told}`;
  const where = "in --db or $SMITHERS_DATABASE_URL";
  let message: string | undefined;
  if (NO_SERVER.has(code)) {
    message = `Cannot reach PostgreSQL at ${url} (${said}): start the server, or fix the host and port ${where}`;
  } else if (code.startsWith("28")) {
    message = `PostgreSQL at ${url} refused the login (${told}): fix the user and password ${where}`;
  } else if (code === "3D000") {
    message = `PostgreSQL at ${url} has no such database (${told}): create it (createdb), or fix the database name ${where}`;
  }
  return message === undefined ? error : new SmithersError("DB_UNREACHABLE", message, { url, cause: root });
}

/**
 * The schema a URL's `search_path` parameter names first (`postgres://…/db?search_path=team_a`):
 * created when missing, so one database can hold several Smithers deployments side by side.
 */
export function searchPathSchema(url: string): string | undefined {
  try {
    const first = new URL(url).searchParams.get("search_path")?.split(",")[0]?.trim();
    return first ? first.replace(/^"(.*)"$/, "$1") : undefined;
  } catch {
    return undefined;
  }
}

/** CREATE TABLE IF NOT EXISTS for every `_smithers_*` table, missing columns, indexes; retired indexes dropped. */
async function ensurePgSmithersTables(q: Sql): Promise<void> {
  for (const table of Object.values(pgInternalTables)) {
    const [create, ...indexes] = createPgTableStatements(table);
    await q.exec(create!);
    const { name, columns } = getTableConfig(table);
    const live = new Map((await liveColumns(q, name)).map((c) => [c.name, c]));
    for (const column of columns) {
      const onDisk = live.get(column.name);
      if (!onDisk) await q.exec(addPgColumnStatement(name, column));
      // A column an earlier version declared NOT NULL that may now be null (`_smithers_scorers.score`).
      else if (onDisk.notNull && !column.notNull && !column.primary) await q.exec(`ALTER TABLE "${name}" ALTER COLUMN "${column.name}" DROP NOT NULL`);
    }
    for (const statement of indexes) await q.exec(statement);
  }
  for (const name of RETIRED_INDEXES) await q.exec(`DROP INDEX IF EXISTS "${name}"`);
  await q.exec(decidedGateBackfill());
}

/** Forward-only migration of output tables, with the same report as on SQLite: the DDL it needs, not yet run. */
async function planPgOutputTables(q: Sql, infos: readonly OutputTableInfo[]): Promise<{ statements: string[]; report: MigrationReport }> {
  const report: MigrationReport = { created: [], added: [], typeChanges: [], removed: [] };
  const statements: string[] = [];
  for (const info of infos) {
    const table = toPgTable(info.table);
    const onDisk = await liveColumns(q, info.tableName);
    if (onDisk.length === 0) {
      statements.push(...createPgTableStatements(table));
      report.created.push(info.tableName);
      continue;
    }
    if (info.custom) continue; // the author owns a custom table's migrations
    const types = new Map(onDisk.map((c) => [c.name, c.type.toLowerCase()]));
    const wanted = getTableConfig(table).columns;
    for (const column of wanted) {
      const actual = types.get(column.name);
      if (actual === undefined) {
        statements.push(addPgColumnStatement(info.tableName, column));
        report.added.push({ table: info.tableName, column: column.name });
      } else if (actual !== column.getSQLType().toLowerCase()) {
        report.typeChanges.push({ table: info.tableName, column: column.name, expected: column.getSQLType(), actual });
      }
    }
    if (info.key === "input") continue; // other workflows' input columns are expected here
    const wantedNames = new Set(wanted.map((c) => c.name));
    for (const name of types.keys()) if (!wantedNames.has(name)) report.removed.push({ table: info.tableName, column: name });
  }
  return { statements, report };
}
