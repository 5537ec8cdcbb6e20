/**
 * SqliteDb: the SQLite implementation of SmithersDb (store.ts). Every read and write takes a turn in a single promise
 * chain, so a multi-statement transaction never interleaves with other work on this
 * connection; work started *inside* an open transaction (same async context) runs at once.
 * Writes and whole transactions are retried on SQLITE_BUSY / IOERR by the shared policy.
 */
import { Database } from "bun:sqlite";
import { AsyncLocalStorage } from "node:async_hooks";
import { existsSync, statSync } from "node:fs";
import { SmithersError } from "../errors/index.ts";
import {
  DB_BUSY_TIMEOUT_MS,
  DB_RETRY_POLICY,
  DB_SYNC_BUSY_TIMEOUT_MS,
  DEFAULT_DURABILITY,
  DURABILITY_MODES,
  SYNCHRONOUS_LEVEL,
  WAL_CHECKPOINT_MIN_BYTES,
  type DbRetryPolicy,
  type Durability,
} from "./constants.ts";
import { isRetryableSqliteError, withSqliteWriteRetry } from "./retry.ts";
import { ensureSmithersTables } from "./ensure.ts";
import { writeNewDatabase } from "./new-sqlite-file.ts";
import { checkSqliteFile, isPlainFile, sqliteOpenError } from "./sqlite-file.ts";
import { migrateOutputTables, type MigrationReport, type OutputTableInfo } from "./output-tables.ts";
import type { Orm, Sql } from "./sql.ts";
import { SqliteSql } from "./sqlite-sql.ts";
import type { SmithersDb, SmithersDbOptions, StorageSize } from "./store.ts";
import type { Drizzle } from "./sqlite-drizzle.ts";

export type { Drizzle } from "./sqlite-drizzle.ts";

type TxToken = { readonly db: SqliteDb; readonly label: string; readonly onCommit: (() => void)[]; readonly onRollback: (() => void)[] };

const txContext = new AsyncLocalStorage<TxToken>();

export class SqliteDb implements SmithersDb {
  readonly dialect = "sqlite" as const;
  readonly syncReads = true;
  readonly path: string;
  readonly sqlite: Database;
  get target(): string {
    return this.path;
  }
  private drizzle: Drizzle | undefined;
  /**
   * Drizzle on this connection, made on first use: a run's own statements are plain SQL (`sql`),
   * and loading Drizzle's session and relational helpers is some ms of every cold start.
   */
  get db(): Drizzle {
    if (this.drizzle === undefined) {
      const { sqliteDrizzle } = require("./sqlite-drizzle.ts") as typeof import("./sqlite-drizzle.ts");
      this.drizzle = sqliteDrizzle(this.sqlite);
    }
    return this.drizzle;
  }
  /** What adapters run their statements on (statements prepared once per connection). */
  readonly sql: SqliteSql;
  private readonly retryPolicy: DbRetryPolicy;
  private readonly busyTimeoutMs: number;
  private readonly syncBusyTimeoutMs: number;
  private mode: Durability;
  private fullCommits = 0;
  private tail: Promise<unknown> = Promise.resolve();
  private activeTx: TxToken | null = null;
  private closed = false;
  private closing: Promise<void> | undefined;
  /** Openers sharing this connection (openSmithersDb): close() closes it when the last of them does. */
  private holders = 1;

  constructor(path: string, options: SmithersDbOptions = {}) {
    this.mode = checkDurability(options.durability ?? DEFAULT_DURABILITY);
    this.path = path;
    // A read-only file, a file that is not a database and a missing directory are refused before SQLite touches them.
    checkSqliteFile(path);
    // A new file is written whole, its tables made and WAL set (two fsyncs where SQLite takes six).
    if (options.ensureTables !== false && isPlainFile(path) && !existsSync(path)) writeNewDatabase(path);
    try {
      this.sqlite = new Database(path, { create: true });
    } catch (error) {
      throw sqliteOpenError(path, error);
    }
    this.busyTimeoutMs = options.busyTimeoutMs ?? DB_BUSY_TIMEOUT_MS;
    // SQLite's busy handler sleeps with the event loop stopped: it gets a few ms, the rest is waited asynchronously.
    this.syncBusyTimeoutMs = Math.min(this.busyTimeoutMs, DB_SYNC_BUSY_TIMEOUT_MS);
    this.retryPolicy = options.retryPolicy ?? DB_RETRY_POLICY;
    try {
      this.sqlite.exec(`PRAGMA busy_timeout = ${this.busyTimeoutMs}`);
      // The first read of the file: a damaged one (SQLITE_CORRUPT, SQLITE_NOTADB) is refused here.
      if (path !== ":memory:") useWal(this.sqlite);
      // After a checkpoint the next write cuts the WAL back instead of leaving it at its peak size.
      this.sqlite.exec("PRAGMA journal_size_limit = 0");
      this.sqlite.exec(`PRAGMA synchronous = ${SYNCHRONOUS_LEVEL[this.mode]}`);
      this.sqlite.exec("PRAGMA foreign_keys = ON");
      this.sql = new SqliteSql(this.sqlite, () => this.db as unknown as Orm);
      try {
        if (options.ensureTables !== false) ensureSmithersTables(this.sqlite);
      } finally {
        this.sqlite.exec(`PRAGMA busy_timeout = ${this.syncBusyTimeoutMs}`);
      }
    } catch (error) {
      // No half-open connection is left behind (nor its handle on the file).
      this.sqlite.close();
      throw sqliteOpenError(path, error);
    }
  }

  /**
   * Runs synchronous schema work (creating or migrating tables when a database is opened) with
   * SQLite's busy handler given the whole busy timeout. Opening is synchronous, so a concurrent
   * opener can only be waited for synchronously; after open, waits are asynchronous.
   */
  setup<T>(fn: (sqlite: Database) => T): T {
    if (this.closed) throw new SmithersError("DB_CLOSED", `Database ${this.path} is closed`);
    this.sqlite.exec(`PRAGMA busy_timeout = ${this.busyTimeoutMs}`);
    try {
      return fn(this.sqlite);
    } finally {
      this.sqlite.exec(`PRAGMA busy_timeout = ${this.syncBusyTimeoutMs}`);
    }
  }

  /** Creates and forward-migrates output tables at once (opening is synchronous on SQLite). */
  ensureOutputTables(infos: readonly OutputTableInfo[]): MigrationReport {
    return this.setup((sqlite) => migrateOutputTables(sqlite, infos));
  }

  /** What a commit on this connection survives (see DURABILITY_MODES). */
  get durability(): Durability {
    return this.mode;
  }

  /** Transactions committed with `synchronous = FULL` by durableTransaction (in either mode). */
  get durableCommits(): number {
    return this.fullCommits;
  }

  /**
   * Switches what later commits survive. Takes its turn in the queue: SQLite refuses to change
   * the level inside a transaction. An unknown mode is INVALID_OPTION, nothing changed.
   */
  setDurability(durability: Durability): Promise<void> {
    let mode: Durability;
    try {
      mode = checkDurability(durability);
    } catch (error) {
      return Promise.reject(error);
    }
    if (this.inTransaction()) return Promise.reject(this.waitsOnItself("setDurability"));
    return this.enqueue(async () => {
      this.sqlite.exec(`PRAGMA synchronous = ${SYNCHRONOUS_LEVEL[mode]}`);
      this.mode = mode;
    });
  }

  /** True when the caller runs inside this database's open transaction. */
  inTransaction(): boolean {
    const token = txContext.getStore();
    return token !== undefined && token === this.activeTx;
  }

  /**
   * Runs `commit` right after the open transaction commits (before any other queued work), or
   * `rollback` if it rolls back. Only inside a transaction.
   */
  afterTransaction(commit: () => void, rollback?: () => void): void {
    const token = txContext.getStore();
    if (!token || token !== this.activeTx) throw new SmithersError("DB_NESTED_TRANSACTION", "afterTransaction must be called inside a transaction");
    token.onCommit.push(commit);
    if (rollback) token.onRollback.push(rollback);
  }

  /** A read that waits its turn (so it never sees a half-done transaction). */
  read<T>(label: string, fn: (q: Sql) => T | Promise<T>): Promise<T> {
    if (this.inTransaction()) return Promise.resolve().then(() => fn(this.sql));
    return this.enqueue(() => this.retry(label, async () => fn(this.sql)));
  }

  /** A single write (one or more statements, autocommit), queued and retried. */
  write<T>(label: string, fn: (q: Sql) => T | Promise<T>): Promise<T> {
    if (this.inTransaction()) return Promise.resolve().then(() => fn(this.sql));
    return this.enqueue(() => this.retry(label, async () => fn(this.sql)));
  }

  /**
   * Runs `fn` inside `BEGIN IMMEDIATE … COMMIT`. On a retryable failure (including at COMMIT)
   * the transaction is rolled back and run again from BEGIN. A nested call from inside the
   * transaction is rejected with DB_NESTED_TRANSACTION.
   */
  withTransaction<T>(label: string, fn: (q: Sql) => T | Promise<T>): Promise<T> {
    if (this.inTransaction()) return Promise.reject(this.nestedError(label));
    return this.enqueue(() => this.retry(label, () => this.runTransaction(label, fn)));
  }

  /**
   * Like withTransaction, but the commit waits for an fsync (`synchronous = FULL`) whatever the
   * connection's durability, so the rows survive a power cut: for records that must exist before
   * an irreversible act (a side-effect intent). The level is switched for this one transaction
   * inside its queue turn and restored after; SQLite cannot switch it inside an open transaction,
   * so a call from inside one is DB_NESTED_TRANSACTION.
   */
  durableTransaction<T>(label: string, fn: (q: Sql) => T | Promise<T>): Promise<T> {
    if (this.inTransaction()) return Promise.reject(this.nestedError(label));
    return this.enqueue(async () => {
      const level = SYNCHRONOUS_LEVEL[this.mode];
      if (level !== "FULL") this.sqlite.exec("PRAGMA synchronous = FULL");
      try {
        const result = await this.retry(label, () => this.runTransaction(label, fn));
        this.fullCommits++;
        return result;
      } finally {
        if (level !== "FULL") this.sqlite.exec(`PRAGMA synchronous = ${level}`);
      }
    });
  }

  /**
   * Folds a WAL larger than `minWalBytes` back into the database file and truncates it, without
   * waiting for readers: when another connection is reading, the checkpoint does what it can and
   * the WAL is cut on a later write (journal_size_limit). Called when a run ends, so a finished
   * run's file is its size; a small WAL is left to SQLite's own checkpoints (a truncating
   * checkpoint syncs the file, which would cost a short run more than the run itself).
   */
  checkpoint(minWalBytes = WAL_CHECKPOINT_MIN_BYTES): Promise<void> {
    if (this.path === ":memory:") return Promise.resolve();
    if (this.inTransaction()) return Promise.reject(this.waitsOnItself("checkpoint"));
    let walBytes = 0;
    try {
      walBytes = statSync(`${this.path}-wal`).size;
    } catch {
      return Promise.resolve(); // no WAL file: nothing to fold
    }
    if (walBytes < minWalBytes) return Promise.resolve();
    return this.enqueue(async () => {
      this.sqlite.exec("PRAGMA busy_timeout = 0");
      try {
        this.sqlite.query("PRAGMA wal_checkpoint(TRUNCATE)").get();
      } catch {
        // a busy or failed checkpoint loses nothing: the WAL stays valid and is folded in later
      } finally {
        this.sqlite.exec(`PRAGMA busy_timeout = ${this.syncBusyTimeoutMs}`);
      }
    });
  }

  /** The file plus its WAL in bytes (pages in use for `:memory:`), and the free pages inside it. */
  storageSize(): Promise<StorageSize> {
    return this.read("storageSize", () => {
      const pragma = (name: string) => Number(Object.values(this.sqlite.query(`PRAGMA ${name}`).get() as Record<string, number>)[0] ?? 0);
      const pageSize = pragma("page_size");
      const freeBytes = pragma("freelist_count") * pageSize;
      if (this.path === ":memory:" || this.path === "") return { fileBytes: pragma("page_count") * pageSize, freeBytes };
      return { fileBytes: fileSize(this.path) + fileSize(`${this.path}-wal`), freeBytes };
    });
  }

  /** Rewrites the file without its free pages (VACUUM) and truncates the WAL, so the file shrinks. */
  vacuum(): Promise<void> {
    return this.write("vacuum", () => {
      this.sqlite.exec("VACUUM");
      if (this.path !== ":memory:") this.sqlite.query("PRAGMA wal_checkpoint(TRUNCATE)").get();
    });
  }

  get isClosed(): boolean {
    return this.closed;
  }

  retain(): this {
    if (this.closed) throw new SmithersError("DB_CLOSED", `Database ${this.path} is closed`);
    this.holders++;
    return this;
  }

  /** SQLite has no notifications: workers poll. */
  async listen(): Promise<undefined> {
    return undefined;
  }

  /**
   * Refuses new work at once (DB_CLOSED), lets the work already queued finish, then closes the
   * connection. Resolves when it is closed; calling it again returns the same promise.
   */
  close(): Promise<void> {
    if (this.inTransaction()) return Promise.reject(this.waitsOnItself("close"));
    if (this.holders > 1) {
      this.holders--;
      return Promise.resolve();
    }
    if (!this.closing) {
      this.closed = true;
      this.closing = this.tail.then(() => this.sqlite.close());
    }
    return this.closing;
  }

  /** Work that waits for the queue, asked for by the transaction holding it, would wait for ever. */
  private waitsOnItself(what: string): SmithersError {
    return new SmithersError("DB_NESTED_TRANSACTION", `${what} was called inside transaction "${this.activeTx?.label}", which it would wait for`, {
      label: what,
      outer: this.activeTx?.label,
    });
  }

  private retry<T>(label: string, operation: () => Promise<T>): Promise<T> {
    return withSqliteWriteRetry(label, operation, this.retryPolicy, this.busyTimeoutMs);
  }

  private nestedError(label: string): SmithersError {
    return new SmithersError(
      "DB_NESTED_TRANSACTION",
      `Transaction "${label}" was opened inside transaction "${this.activeTx?.label}"; SQLite has no nested transactions here`,
      { label, outer: this.activeTx?.label },
    );
  }

  private async runTransaction<T>(label: string, fn: (q: Sql) => T | Promise<T>): Promise<T> {
    const token: TxToken = { db: this, label, onCommit: [], onRollback: [] };
    this.sqlite.exec("BEGIN IMMEDIATE");
    this.activeTx = token;
    let result: T;
    try {
      this.sql.beginCombining();
      result = await txContext.run(token, () => fn(this.sql));
      this.sql.endCombining(); // the rows held for multi-row statements, before COMMIT
      this.sqlite.exec("COMMIT");
    } catch (error) {
      this.sql.discardCombined();
      // Roll back before the hooks: a hook that throws must not leave the connection in a transaction.
      if (this.sqlite.inTransaction) {
        try {
          this.sqlite.exec("ROLLBACK");
        } catch {
          // the original error matters more than a failed rollback
        }
      }
      for (const hook of token.onRollback) {
        try {
          hook();
        } catch {
          // the caller sees the error that rolled the transaction back, not a hook's
        }
      }
      throw error;
    } finally {
      this.activeTx = null;
    }
    // Synchronously, before the queue moves on: no other work sees the commit before its hooks ran.
    for (const hook of token.onCommit) hook();
    return result;
  }

  private enqueue<T>(run: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new SmithersError("DB_CLOSED", `Database ${this.path} is closed`));
    const result = this.tail.then(run, run);
    this.tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }
}

/**
 * Switching a new file to WAL takes an exclusive lock that SQLite does not wait for (the busy
 * handler is not consulted), so processes opening a fresh database at once retry briefly.
 */
function useWal(sqlite: Database): void {
  for (let attempt = 0; ; attempt++) {
    try {
      const current = sqlite.query("PRAGMA journal_mode").get() as { journal_mode?: string } | null;
      if (current?.journal_mode !== "wal") sqlite.exec("PRAGMA journal_mode = WAL");
      return;
    } catch (error) {
      if (!isRetryableSqliteError(error) || attempt >= 40) throw error;
      Bun.sleepSync(5 + attempt * 5);
    }
  }
}

function fileSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/** Rejects a durability mode that is not one of DURABILITY_MODES with INVALID_OPTION. */
export function checkDurability(value: unknown): Durability {
  if ((DURABILITY_MODES as readonly unknown[]).includes(value)) return value as Durability;
  throw new SmithersError(
    "INVALID_OPTION",
    `durability must be one of ${DURABILITY_MODES.map((m) => `"${m}"`).join(", ")}, got ${typeof value === "string" ? `"${value}"` : String(value)}`,
    {
      option: "durability",
      value,
    },
  );
}
