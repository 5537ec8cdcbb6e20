/**
 * SmithersDb: the one door to SQLite. Every read and write takes a turn in a single promise
 * chain, so a multi-statement transaction never interleaves with other work on this
 * connection; work started *inside* an open transaction (same async context) runs at once.
 * Writes and whole transactions are retried on SQLITE_BUSY / IOERR by the shared policy.
 */
import { Database } from "bun:sqlite";
import { AsyncLocalStorage } from "node:async_hooks";
import { statSync } from "node:fs";
import { drizzle, type BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import { SmithersError } from "../errors/index.ts";
import { DB_BUSY_TIMEOUT_MS, DB_RETRY_POLICY, WAL_CHECKPOINT_MIN_BYTES, type DbRetryPolicy } from "./constants.ts";
import { isRetryableSqliteError, withSqliteWriteRetry } from "./retry.ts";
import { ensureSmithersTables } from "./ensure.ts";

export type Drizzle = BunSQLiteDatabase<Record<string, never>> & { $client: Database };

export type SmithersDbOptions = {
  /** SQLite busy_timeout in ms (default 1000); retries take over after it. */
  busyTimeoutMs?: number;
  retryPolicy?: DbRetryPolicy;
  /** Create the `_smithers_*` tables on open (default true). */
  ensureTables?: boolean;
};

type TxToken = { readonly db: SmithersDb; readonly label: string; readonly onCommit: (() => void)[]; readonly onRollback: (() => void)[] };

const txContext = new AsyncLocalStorage<TxToken>();

export class SmithersDb {
  readonly path: string;
  readonly sqlite: Database;
  readonly db: Drizzle;
  private readonly retryPolicy: DbRetryPolicy;
  private readonly busyTimeoutMs: number;
  private tail: Promise<unknown> = Promise.resolve();
  private activeTx: TxToken | null = null;
  private closed = false;

  constructor(path: string, options: SmithersDbOptions = {}) {
    this.path = path;
    this.sqlite = new Database(path, { create: true });
    this.busyTimeoutMs = options.busyTimeoutMs ?? DB_BUSY_TIMEOUT_MS;
    this.sqlite.exec(`PRAGMA busy_timeout = ${this.busyTimeoutMs}`);
    if (path !== ":memory:") useWal(this.sqlite);
    // After a checkpoint the next write cuts the WAL back instead of leaving it at its peak size.
    this.sqlite.exec("PRAGMA journal_size_limit = 0");
    this.sqlite.exec("PRAGMA synchronous = NORMAL");
    this.sqlite.exec("PRAGMA foreign_keys = ON");
    this.db = drizzle({ client: this.sqlite }) as Drizzle;
    this.retryPolicy = options.retryPolicy ?? DB_RETRY_POLICY;
    if (options.ensureTables !== false) ensureSmithersTables(this.sqlite);
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
  read<T>(label: string, fn: (db: Drizzle) => T | Promise<T>): Promise<T> {
    if (this.inTransaction()) return Promise.resolve().then(() => fn(this.db));
    return this.enqueue(() => withSqliteWriteRetry(label, async () => fn(this.db), this.retryPolicy));
  }

  /** A single write (one or more statements, autocommit), queued and retried. */
  write<T>(label: string, fn: (db: Drizzle) => T | Promise<T>): Promise<T> {
    if (this.inTransaction()) return Promise.resolve().then(() => fn(this.db));
    return this.enqueue(() => withSqliteWriteRetry(label, async () => fn(this.db), this.retryPolicy));
  }

  /**
   * Runs `fn` inside `BEGIN IMMEDIATE … COMMIT`. On a retryable failure (including at COMMIT)
   * the transaction is rolled back and run again from BEGIN. A nested call from inside the
   * transaction is rejected with DB_NESTED_TRANSACTION.
   */
  withTransaction<T>(label: string, fn: (db: Drizzle) => T | Promise<T>): Promise<T> {
    if (this.inTransaction()) {
      return Promise.reject(
        new SmithersError(
          "DB_NESTED_TRANSACTION",
          `Transaction "${label}" was opened inside transaction "${this.activeTx?.label}"; SQLite has no nested transactions here`,
          { label, outer: this.activeTx?.label },
        ),
      );
    }
    return this.enqueue(() => withSqliteWriteRetry(label, () => this.runTransaction(label, fn), this.retryPolicy));
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
        this.sqlite.exec(`PRAGMA busy_timeout = ${this.busyTimeoutMs}`);
      }
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.sqlite.close();
  }

  private async runTransaction<T>(label: string, fn: (db: Drizzle) => T | Promise<T>): Promise<T> {
    const token: TxToken = { db: this, label, onCommit: [], onRollback: [] };
    this.sqlite.exec("BEGIN IMMEDIATE");
    this.activeTx = token;
    let result: T;
    try {
      result = await txContext.run(token, () => fn(this.db));
      this.sqlite.exec("COMMIT");
    } catch (error) {
      for (const hook of token.onRollback) hook();
      if (this.sqlite.inTransaction) {
        try {
          this.sqlite.exec("ROLLBACK");
        } catch {
          // the original error matters more than a failed rollback
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

/** Opens (creating if needed) a Smithers database with WAL, busy timeout and foreign keys. */
export function openSmithersDb(path: string, options?: SmithersDbOptions): SmithersDb {
  return new SmithersDb(path, options);
}

/** Rows changed by a Drizzle `.run()` (typed `void` by the bun-sqlite driver, a `Changes` object at run time). */
export function changedRows(result: unknown): number {
  return (result as { changes?: number } | undefined)?.changes ?? 0;
}
