/**
 * A SQLite file that cannot serve as a Smithers database: read-only, not a database, damaged, or
 * not openable at all. Checked before SQLite touches the file where a check can tell (so nothing is
 * written to it, not even a WAL beside it), and SQLite's own refusals while opening mapped to the
 * same codes. Each message ends with what to do.
 */
import { accessSync, closeSync, constants, mkdirSync, openSync, readSync, statSync } from "node:fs";
import { dirname } from "node:path";
import { SmithersError } from "../errors/index.ts";

/** The first 16 bytes of every SQLite 3 database file. */
const SQLITE_MAGIC = "SQLite format 3\0";
const HEADER_BYTES = 100;

/** Paths SQLite does not treat as a file: in-memory, a private temporary database, a URI. */
export function isPlainFile(path: string): boolean {
  return path !== ":memory:" && path !== "" && !path.startsWith("file:");
}

function errnoOf(error: unknown): string {
  return String((error as { code?: unknown })?.code ?? "");
}

/**
 * Refuses, before SQLite opens it, a path that is a directory, a file this process may not read
 * or write (permissions, a read-only file system: also as root), a file that does not begin like a
 * SQLite database, and a new file whose directory cannot be made (missing ones are made). An empty
 * file is a new database.
 */
export function checkSqliteFile(path: string): void {
  if (!isPlainFile(path)) return;
  let size: number;
  try {
    const stat = statSync(path);
    if (stat.isDirectory()) throw openFailed(path, "it is a directory", `pass --db a file inside it, such as ${path.replace(/\/+$/, "")}/smithers.db`);
    size = stat.size;
  } catch (error) {
    if (SmithersError.is(error)) throw error;
    const file = errnoOf(error) === "ENOTDIR" ? fileAncestor(dirname(path)) : undefined;
    if (file !== undefined) throw openFailed(path, `${file} is a file, not a directory`, "pass --db a path in a directory");
    if (errnoOf(error) !== "ENOENT")
      throw openFailed(
        path,
        `cannot look at it (${errnoOf(error) || String(error)})`,
        "check the permissions of its directories, or pass --db another path",
        error,
      );
    checkNewFileDir(path);
    return;
  }
  try {
    accessSync(path, constants.R_OK);
  } catch (error) {
    throw openFailed(path, `it cannot be read (${errnoOf(error)})`, "give this user read and write access to it, or pass --db another path", error);
  }
  const header = size > 0 ? readHeader(path) : undefined;
  if (header !== undefined && header.subarray(0, SQLITE_MAGIC.length).toString("latin1") !== SQLITE_MAGIC) {
    throw new SmithersError(
      "DB_NOT_A_DATABASE",
      `${path} is not a SQLite database; nothing was written to it: pass --db the path of a Smithers database, or of a new file`,
      { path },
    );
  }
  // Judged twice, a moment apart: another process checkpointing the file as it is read can make it
  // look short for an instant (bench/soak saw a healthy database refused so), a cut file stays short.
  if (header !== undefined && cutShort(path) !== undefined) {
    Bun.sleepSync(CUT_SHORT_RECHECK_MS);
    const short = cutShort(path);
    if (short) throw corrupt(path, `cut short: it is ${short.size} bytes, its header says ${short.expected}`);
  }
  try {
    accessSync(path, constants.W_OK);
  } catch (error) {
    throw readOnly(path, `${errnoOf(error) === "EROFS" ? "on a read-only file system" : "not writable by this user"}`, error);
  }
  // A WAL or shared-memory file another user left beside it (a process of theirs was killed) makes it read-only here too.
  for (const side of [`${path}-wal`, `${path}-shm`, `${path}-journal`]) {
    try {
      accessSync(side, constants.W_OK);
    } catch (error) {
      if (errnoOf(error) !== "ENOENT") throw readOnly(path, `${side} beside it is not writable by this user`, error);
    }
  }
}

/**
 * A new database: its missing directories are made (`--db data/runs.db` just works), and a path
 * that cannot be made is refused: a parent that is a file, or one this user may not write.
 */
function checkNewFileDir(path: string): void {
  const dir = dirname(path);
  try {
    if (!statSync(dir).isDirectory()) throw openFailed(path, `${dir} is a file, not a directory`, "pass --db a path in a directory");
  } catch (error) {
    if (SmithersError.is(error)) throw error;
    if (errnoOf(error) !== "ENOENT" && errnoOf(error) !== "ENOTDIR") return; // let SQLite say what is wrong
    makeDir(path, dir);
  }
  try {
    accessSync(dir, constants.W_OK);
  } catch (error) {
    throw readOnly(
      path,
      `it does not exist, and its directory ${dir} is ${errnoOf(error) === "EROFS" ? "on a read-only file system" : "not writable by this user"}`,
      error,
    );
  }
}

/** Makes `dir` and its missing parents for a new database at `path`, or says why it cannot be made. */
function makeDir(path: string, dir: string): void {
  try {
    mkdirSync(dir, { recursive: true });
  } catch (error) {
    const errno = errnoOf(error);
    const file = fileAncestor(dir);
    if (file !== undefined) throw openFailed(path, `${file} is a file, not a directory`, "pass --db a path in a directory");
    if (errno === "EACCES" || errno === "EPERM" || errno === "EROFS") {
      throw readOnly(
        path,
        `its directory ${dir} does not exist and cannot be made: ${errno === "EROFS" ? "a read-only file system" : "this user may not write its parent"}`,
        error,
      );
    }
    throw openFailed(path, `its directory ${dir} cannot be made (${errno || String(error)})`, "create it, or pass --db a path in an existing directory", error);
  }
}

/** The nearest ancestor of `dir` (or `dir` itself) that exists and is not a directory. */
function fileAncestor(dir: string): string | undefined {
  for (let at = dir; ; at = dirname(at)) {
    try {
      return statSync(at).isDirectory() ? undefined : at;
    } catch {
      if (dirname(at) === at) return undefined;
    }
  }
}

/** The database header: the first 100 bytes (fewer when the file is shorter). */
function readHeader(path: string): Buffer {
  const fd = openSync(path, "r");
  try {
    const head = Buffer.alloc(HEADER_BYTES);
    return head.subarray(0, readSync(fd, head, 0, head.length, 0));
  } finally {
    closeSync(fd);
  }
}

/** How long to wait before judging a file that looked cut short again. */
const CUT_SHORT_RECHECK_MS = 25;

/**
 * Whether the file is shorter than its header promises with no WAL or hot journal beside it that
 * may hold the missing pages (then SQLite judges). The header is read first and the size last: a
 * checkpoint writes pages before the header that counts them.
 */
function cutShort(path: string): { size: number; expected: number } | undefined {
  const header = readHeader(path);
  const expected = expectedBytes(header);
  if (fileBytes(`${path}-wal`) > 0 || fileBytes(`${path}-journal`) > 0) return undefined;
  const size = fileBytes(path);
  return size < expected ? { size, expected } : undefined;
}

/**
 * The size the header promises: at least its first page, and every page when the header's page
 * count is valid (its version-valid-for number matches the change counter, as every SQLite since
 * 3.7.0 writes it). A shorter file was cut short.
 */
function expectedBytes(header: Buffer): number {
  if (header.length < HEADER_BYTES) return HEADER_BYTES;
  const raw = header.readUInt16BE(16);
  const pageSize = raw === 1 ? 65_536 : raw;
  const pages = header.readUInt32BE(28);
  const valid = pages > 0 && header.readUInt32BE(24) === header.readUInt32BE(92);
  return pageSize * (valid ? pages : 1);
}

function fileBytes(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

function corrupt(path: string, why: string, cause?: unknown): SmithersError {
  return new SmithersError(
    "DB_CORRUPT",
    `Database ${path} is damaged (${why}): restore it from a backup, or save what is left with \`sqlite3 ${path} .recover | sqlite3 recovered.db\``,
    { path, ...(cause === undefined ? {} : { cause }) },
  );
}

function readOnly(path: string, why: string, cause?: unknown): SmithersError {
  return new SmithersError(
    "DB_READ_ONLY",
    `Database ${path} is read-only (${why}); Smithers writes to its database: make the file and its directory writable, or pass --db a writable copy`,
    { path, ...(cause === undefined ? {} : { cause }) },
  );
}

function openFailed(path: string, why: string, todo: string, cause?: unknown): SmithersError {
  return new SmithersError("DB_OPEN_FAILED", `Cannot open database ${path}: ${why}; ${todo}`, {
    path,
    ...(cause === undefined ? {} : { cause }),
  });
}

/**
 * The coded error for a SQLite failure while opening `path` (and setting up its tables), or the
 * error itself when it is not about the file (a busy lock is retried elsewhere).
 */
export function sqliteOpenError(path: string, error: unknown): unknown {
  const code = errnoOf(error);
  const sqlite = error instanceof Error ? error.message : String(error);
  if (code.startsWith("SQLITE_READONLY")) {
    return readOnly(path, code === "SQLITE_READONLY_DIRECTORY" ? `its directory ${dirname(path)} is not writable` : `SQLite: ${sqlite}`, error);
  }
  if (code === "SQLITE_NOTADB") {
    return new SmithersError(
      "DB_NOT_A_DATABASE",
      `${path} is not a SQLite database (SQLite: ${sqlite}): pass --db the path of a Smithers database, or of a new file`,
      {
        path,
        cause: error,
      },
    );
  }
  if (code.startsWith("SQLITE_CORRUPT")) {
    return corrupt(path, `SQLite: ${sqlite}`, error);
  }
  if (code.startsWith("SQLITE_CANTOPEN") || code === "SQLITE_PERM" || code === "SQLITE_AUTH") {
    return openFailed(path, `SQLite: ${sqlite}`, "check that its directory exists and this user may write there, or pass --db another path", error);
  }
  return error;
}
