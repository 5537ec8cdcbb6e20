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
import { connect, isRetryablePgError, PgSql, redactUrl, type PgClient, type PgClientOptions } from "./driver.ts";
import { pgSchemaCurrent } from "./schema-check.ts";
import { pgInternalTables, toPgTable } from "./tables.ts";

type TxToken = { readonly db: PgDb; readonly label: string; readonly q: PgSql; readonly onCommit: (() => void)[]; readonly onRollback: (() => void)[] };

const txContext = new AsyncLocalStorage<TxToken>();

/** How long close() waits for schema work, then for queries in flight, in seconds. */
const CLOSE_TIMEOUT_S = 5;
const FALSE = () => false;

/** The advisory lock every process takes for schema changes (key space 0). */
const SCHEMA_LOCK = "SELECT pg_advisory_xact_lock(0, 0)";

export type PgDbOptions = SmithersDbOptions & PgClientOptions;

export class PgDb implements SmithersDb {
  readonly dialect = "postgres" as const;
  readonly syncReads = false;
  readonly path: string;
  readonly client: PgClient;
  get target(): string {
    return this.url;
  }
  /** Autocommit statements on the pool. */
  readonly sql: PgSql;
  private readonly retryPolicy: DbRetryPolicy;
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
    this.client = connect(url, options);
    this.sql = new PgSql(this.client);
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
      for (const table of Object.values(pgInternalTables)) await this.client.unsafe(`VACUUM "${getTableConfig(table).name}"`);
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
      const { unlisten } = await this.client.listen(channel, onMessage);
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
    this.closing ??= Promise.race([this.ready.then(FALSE, FALSE), gaveUp]).then((stuck) => this.client.end({ timeout: stuck ? 0 : CLOSE_TIMEOUT_S }));
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
            const q = new PgSql(tx);
            await q.exec(SCHEMA_LOCK);
            return fn(q);
          }) as Promise<T>,
      );
    });
  }

  private retry<T>(label: string, operation: () => Promise<T>): Promise<T> {
    return withSqliteWriteRetry(label, operation, this.retryPolicy, 0, isRetryablePgError);
  }

  private async runTransaction<T>(label: string, fn: (q: Sql) => T | Promise<T>): Promise<T> {
    let token: TxToken | undefined;
    try {
      const result = (await this.client.begin(async (tx) => {
        token = { db: this, label, q: new PgSql(tx), onCommit: [], onRollback: [] };
        const own = token;
        return txContext.run(own, () => fn(own.q));
      })) as T;
      for (const hook of token?.onCommit ?? []) hook();
      return result;
    } catch (error) {
      for (const hook of token?.onRollback ?? []) {
        try {
          hook();
        } catch {
          // the caller sees the error that rolled the transaction back, not a hook's
        }
      }
      throw error;
    }
  }
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
    const present = new Set((await liveColumns(q, getTableConfig(table).name)).map((c) => c.name));
    for (const column of getTableConfig(table).columns) if (!present.has(column.name)) await q.exec(addPgColumnStatement(getTableConfig(table).name, column));
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
