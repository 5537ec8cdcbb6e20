/**
 * SmithersDb: the storage interface the engine, CLI and server call. Two implementations sit
 * behind it, SQLite (smithers-db.ts, the embedded default) and PostgreSQL (pg/), both built
 * from one table list (internal-schema.ts); nothing outside src/db knows which one it has.
 */
import type { DbRetryPolicy, Durability } from "./constants.ts";
import type { MigrationReport, OutputTableInfo } from "./output-tables.ts";
import type { Dialect, Sql } from "./sql.ts";

export type SmithersDbOptions = {
  /**
   * How long one try waits for another connection's lock, in ms (default 1000), without blocking
   * the event loop; the retry policy takes over after it.
   */
  busyTimeoutMs?: number;
  /** What a commit survives: "process" (default, kill -9) or "power" (also power loss, slower). */
  durability?: Durability;
  retryPolicy?: DbRetryPolicy;
  /** Create the `_smithers_*` tables on open (default true). */
  ensureTables?: boolean;
};

/** What a database reports of its size (retention). */
export type StorageSize = { fileBytes: number; freeBytes: number };

export interface SmithersDb {
  readonly dialect: Dialect;
  /**
   * True when one output row can be read synchronously (readOutputRowNow: SQLite). Without it a
   * run holds its output rows in memory, read once when it starts.
   */
  readonly syncReads: boolean;
  /** Where the data lives: a file path, ":memory:", or a PostgreSQL URL without its password (for messages). */
  readonly path: string;
  /** What opens this database again (openSmithersDb, runWorkflow's dbPath): the path, or the whole URL. */
  readonly target: string;
  /** What a commit survives (see DURABILITY_MODES). */
  readonly durability: Durability;
  /** Transactions committed by durableTransaction. */
  readonly durableCommits: number;
  setDurability(durability: Durability): Promise<void>;
  /** True when the caller runs inside this database's open transaction. */
  inTransaction(): boolean;
  /** Runs `commit` right after the open transaction commits, or `rollback` if it rolls back. */
  afterTransaction(commit: () => void, rollback?: () => void): void;
  /** A read that never sees a half-done transaction of this process. */
  read<T>(label: string, fn: (q: Sql) => T | Promise<T>): Promise<T>;
  /** One write (autocommit), retried by the backend's policy. */
  write<T>(label: string, fn: (q: Sql) => T | Promise<T>): Promise<T>;
  /**
   * Runs `fn` in one transaction that holds the write lock (SQLite) or row and advisory locks as
   * each statement needs (PostgreSQL); retried from the start on a retryable failure.
   */
  withTransaction<T>(label: string, fn: (q: Sql) => T | Promise<T>): Promise<T>;
  /** withTransaction whose commit survives power loss whatever `durability` says. */
  durableTransaction<T>(label: string, fn: (q: Sql) => T | Promise<T>): Promise<T>;
  /** Creates missing output tables and columns (forward only); reports type changes and dropped columns. */
  ensureOutputTables(infos: readonly OutputTableInfo[]): MigrationReport | Promise<MigrationReport>;
  /** Gives back space a large write-ahead log holds (no-op where the backend manages it). */
  checkpoint(minWalBytes?: number): Promise<void>;
  /** The database's size and the part of it that is free. */
  storageSize(): Promise<StorageSize>;
  /** Rewrites the database to give free space back. */
  vacuum(): Promise<void>;
  /**
   * Calls `onMessage` for each notification on `channel` (PostgreSQL LISTEN, on a connection of its
   * own) until the returned function is called; undefined where the backend has none (SQLite).
   */
  listen(channel: string, onMessage: (payload: string) => void): Promise<(() => Promise<void>) | undefined>;
  /** True once close() took effect (this holder was the last). */
  readonly isClosed: boolean;
  /**
   * Counts one more holder of this connection (openSmithersDb hands an open one out again): each
   * holder closes once, and the connection closes with the last of them.
   */
  retain(): this;
  /** Refuses new work, lets queued work finish, closes (see retain: the last holder's close does). */
  close(): Promise<void>;
}
