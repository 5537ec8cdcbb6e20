/**
 * A new SQLite database file written whole: every internal table as this version makes them, in
 * WAL mode, as one image built once per process in memory and written beside the path, then
 * linked to it (so another process never sees it half written, and a path that appeared meanwhile
 * is left alone).
 *
 * Why: SQLite makes a new file in six fsyncs (switching a new file to WAL goes through a rollback
 * journal: journal, directory, journal, file; then the tables' commit: WAL, directory), some 25 ms
 * of a `smithers up` on a new database on a plain disk. The image costs two: the file's, and its
 * directory's, so the new name survives a power cut like the file's content does.
 */
import { Database } from "bun:sqlite";
import { closeSync, fsyncSync, linkSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { dirname, join } from "node:path";
import { ensureSmithersTables, schemaStamp } from "./ensure.ts";

/** SQLite's header bytes 18 and 19: the file format's write and read versions, 2 meaning WAL. */
const WRITE_VERSION_BYTE = 18;
const READ_VERSION_BYTE = 19;
const WAL_FORMAT = 2;

/** SQLite's header bytes 68 to 71: `PRAGMA application_id`, big-endian, which holds schemaStamp(). */
const APPLICATION_ID_OFFSET = 68;

/**
 * The image as the bundle ships it (scripts/build-bundle.ts writes it beside the bundle's core at
 * pack time); from src/ there is none here, and it is built.
 */
export const SHIPPED_IMAGE_NAME = "new-database.sqlite";

let image: Uint8Array | undefined;

/** The internal tables in an in-memory database, serialized, its header marked WAL: shipped with the bundle, else built once per process. */
function newDatabaseImage(): Uint8Array {
  image ??= shippedImage() ?? buildNewDatabaseImage();
  return image;
}

/** The bundle's image, when it is there and made for this schema (its application_id is this version's stamp). */
function shippedImage(): Uint8Array | undefined {
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(join(import.meta.dir, SHIPPED_IMAGE_NAME));
  } catch {
    return undefined;
  }
  if (bytes.length < 100) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return view.getUint32(APPLICATION_ID_OFFSET) === schemaStamp() && bytes[WRITE_VERSION_BYTE] === WAL_FORMAT ? bytes : undefined;
}

/** Builds the image: the internal tables made in memory by ensureSmithersTables, serialized, marked WAL. */
export function buildNewDatabaseImage(): Uint8Array {
  const memory = new Database(":memory:");
  try {
    ensureSmithersTables(memory);
    const bytes = memory.serialize();
    bytes[WRITE_VERSION_BYTE] = WAL_FORMAT;
    bytes[READ_VERSION_BYTE] = WAL_FORMAT;
    return bytes;
  } finally {
    memory.close();
  }
}

/**
 * Writes a new database at `path`, which did not exist a moment ago. False when it was not written
 * (the path exists by now, or the file system has no hard links): SQLite then opens the path as it
 * would have, and makes the tables itself if they are missing.
 */
export function writeNewDatabase(path: string): boolean {
  const bytes = newDatabaseImage();
  const temp = `${path}.${process.pid}.${Math.random().toString(36).slice(2, 10)}.new`;
  let fd: number;
  try {
    fd = openSync(temp, "wx", 0o644);
  } catch {
    return false; // SQLite's own open reports what is wrong with the directory, if anything
  }
  try {
    try {
      writeSync(fd, bytes);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    linkSync(temp, path);
  } catch {
    return false; // EEXIST: another process made it first; else no hard links here
  } finally {
    rmSync(temp, { force: true });
  }
  syncDirectory(dirname(path));
  return true;
}

/** fsync of a directory, so an entry just made in it lasts; a platform that cannot open one for it has nothing to sync. */
function syncDirectory(dir: string): void {
  let fd: number;
  try {
    fd = openSync(dir, "r");
  } catch {
    return;
  }
  try {
    fsyncSync(fd);
  } catch {
    // some file systems refuse fsync on a directory: their entries are durable by other means
  } finally {
    closeSync(fd);
  }
}
