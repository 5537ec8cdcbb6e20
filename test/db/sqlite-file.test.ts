/**
 * Database files that cannot serve: a file that is not a database, a database cut short, a
 * read-only file (also as root: a read-only file system), a directory, a directory that cannot be
 * made (missing directories are made). Each
 * is a SmithersError with its code, from every way a program opens a database, and the file is
 * left as it was: the same bytes, the same mtime, no WAL or shared-memory file beside it.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { openSmithersDb, SqliteDb } from "../../src/db/index.ts";
import { runWorkflow } from "../../src/engine/index.ts";
import steps from "../fixtures/steps.tsx";
import { onPostgres, rejection, tempDir } from "../helpers.ts";
import { asUnprivileged, onReadOnlyFs, otherUserUnavailable, readOnlyFsUnavailable, unprivilegedUnavailable } from "../support/restricted.ts";

type FileState = { bytes: Buffer; mtimeMs: number; dir: string[] };

function stateOf(path: string): FileState {
  const dir = resolve(path, "..");
  return { bytes: readFileSync(path), mtimeMs: statSync(path).mtimeMs, dir: readdirSync(dir).sort() };
}

function expectUnchanged(path: string, before: FileState): void {
  const after = stateOf(path);
  expect(after.bytes.equals(before.bytes)).toBe(true);
  expect(after.mtimeMs).toBe(before.mtimeMs);
  expect(after.dir).toEqual(before.dir); // no -wal, no -shm, no journal
}

/** A real Smithers database with a finished run in it, every page in the file (VACUUM folds the WAL in). */
async function realDatabase(dir: string): Promise<string> {
  const path = join(dir, "real.db");
  const result = await runWorkflow(steps, { dbPath: path, input: { label: "x" }, runId: "r1" });
  expect(result.status).toBe("finished");
  const db = new SqliteDb(path);
  await db.vacuum();
  await db.close();
  await steps.dbFor(path).close();
  expect(statSync(path).size).toBeGreaterThan(40 * 4096);
  return path;
}

/** The message `new SqliteDb(path)` fails with ("" when it opens). */
function messageOpening(path: string): string {
  try {
    new SqliteDb(path);
    return "";
  } catch (error) {
    return (error as Error).message;
  }
}

/** The code each way of opening a database gives for `path`: new SqliteDb, openSmithersDb, a workflow's own database. */
async function codesOpening(path: string): Promise<string[]> {
  const codeOf = (open: () => unknown) => {
    try {
      open();
      return "opened";
    } catch (error) {
      return String((error as { code?: unknown }).code);
    }
  };
  const viaWorkflow = await rejection<{ code: string }>(runWorkflow(steps, { dbPath: path, input: { label: "x" } }));
  return [codeOf(() => new SqliteDb(path)), codeOf(() => openSmithersDb(path)), viaWorkflow.code];
}

describe.skipIf(onPostgres)("opening a database file that cannot serve", () => {
  test("a text file is DB_NOT_A_DATABASE, saying what to do, and is left byte for byte as it was", async () => {
    const path = join(tempDir(), "notes.txt");
    writeFileSync(path, "shopping list\n- milk\n- a database, apparently\n");
    const before = stateOf(path);
    expect(await codesOpening(path)).toEqual(["DB_NOT_A_DATABASE", "DB_NOT_A_DATABASE", "DB_NOT_A_DATABASE"]);
    const message = messageOpening(path);
    expect(message).toContain(path);
    expect(message).toContain("pass --db");
    expectUnchanged(path, before);
  });

  test("a database cut in half is DB_CORRUPT, pointing at a backup or .recover, and is left as it was", async () => {
    const dir = tempDir();
    const real = await realDatabase(dir);
    const whole = readFileSync(real);
    const path = join(dir, "cut.db");
    writeFileSync(path, whole.subarray(0, Math.floor(whole.length / 2)));
    const before = stateOf(path);
    expect(await codesOpening(path)).toEqual(["DB_CORRUPT", "DB_CORRUPT", "DB_CORRUPT"]);
    expect(messageOpening(path)).toContain(".recover");
    expectUnchanged(path, before);
  });

  test("a database cut inside its first page is DB_CORRUPT, not taken for a new database and written over", async () => {
    const dir = tempDir();
    const whole = readFileSync(await realDatabase(dir));
    const path = join(dir, "stub.db");
    writeFileSync(path, whole.subarray(0, 2048));
    const before = stateOf(path);
    expect(await codesOpening(path)).toEqual(["DB_CORRUPT", "DB_CORRUPT", "DB_CORRUPT"]);
    expectUnchanged(path, before);
  });

  test("a database whose schema page is scrambled is DB_CORRUPT as SQLite finds it, and is left as it was", async () => {
    const dir = tempDir();
    const damaged = Buffer.from(readFileSync(await realDatabase(dir)));
    damaged.fill(0x5a, 100, 4096); // page 1 after the header: the schema's b-tree
    const path = join(dir, "scrambled.db");
    writeFileSync(path, damaged);
    const before = stateOf(path);
    expect(await codesOpening(path)).toEqual(["DB_CORRUPT", "DB_CORRUPT", "DB_CORRUPT"]);
    expectUnchanged(path, before);
  });

  test("a path in directories that do not exist makes them, and the database in them", async () => {
    const dir = tempDir();
    const path = join(dir, "data", "runs", "smithers.db");
    const db = new SqliteDb(path);
    await db.close();
    expect(readFileSync(path).subarray(0, 15).toString()).toBe("SQLite format 3");
  });

  test("a path below a regular file is DB_OPEN_FAILED naming that file, and nothing is made", async () => {
    const dir = tempDir();
    const file = join(dir, "notes.txt");
    writeFileSync(file, "notes\n");
    for (const path of [join(file, "smithers.db"), join(file, "deeper", "smithers.db")]) {
      expect(await codesOpening(path)).toEqual(["DB_OPEN_FAILED", "DB_OPEN_FAILED", "DB_OPEN_FAILED"]);
      expect(messageOpening(path)).toBe(`Cannot open database ${path}: ${file} is a file, not a directory; pass --db a path in a directory`);
    }
    expect(readdirSync(dir)).toEqual(["notes.txt"]);
  });

  // /sys refuses new entries to every user, root included: a directory that cannot be made without chmod.
  test.skipIf(process.platform !== "linux")("a directory that cannot be made (also as root) is DB_READ_ONLY saying so", async () => {
    const path = "/sys/smithers-test/smithers.db";
    expect(await codesOpening(path)).toEqual(["DB_READ_ONLY", "DB_READ_ONLY", "DB_READ_ONLY"]);
    expect(messageOpening(path)).toContain("its directory /sys/smithers-test does not exist and cannot be made");
  });

  test("a directory given as the database is DB_OPEN_FAILED", async () => {
    const dir = tempDir();
    expect(await codesOpening(dir)).toEqual(["DB_OPEN_FAILED", "DB_OPEN_FAILED", "DB_OPEN_FAILED"]);
    expect(readdirSync(dir)).toEqual([]);
  });

  test("an empty file is a new database, not an error", async () => {
    const path = join(tempDir(), "empty.db");
    writeFileSync(path, "");
    const db = new SqliteDb(path);
    await db.close();
    expect(readFileSync(path).subarray(0, 15).toString()).toBe("SQLite format 3");
  });
});

/** A temp directory another user can reach: the suite's own temp root is private (0700), so it may be entered, not listed. */
function reachableTempDir(): string {
  const dir = tempDir();
  chmodSync(dirname(dir), 0o711);
  return dir;
}

/** Opens `path` in a separate process (as `prefix` runs it): the error's code and message, or "opened". */
function openInProcess(prefix: string[], path: string): { code: string; message?: string } {
  const script = `import { openSmithersDb } from ${JSON.stringify(resolve("src/db/index.ts"))};
try { const db = openSmithersDb(process.argv[1]); await db.close(); console.log(JSON.stringify({ code: "opened" })); }
catch (e) { console.log(JSON.stringify({ code: e.code ?? String(e), message: e.message })); }`;
  const proc = Bun.spawnSync([...prefix, process.execPath, "-e", script, path], { stdout: "pipe", stderr: "pipe" });
  const out = proc.stdout.toString().trim();
  return out.startsWith("{") ? JSON.parse(out) : { code: `${out}${proc.stderr.toString().trim()}` };
}

describe.skipIf(onPostgres)("opening a read-only database", () => {
  test.skipIf(unprivilegedUnavailable !== undefined)(
    "a file this user may not write, in a directory it may, is DB_READ_ONLY and gets no WAL or shared-memory file beside it",
    async () => {
      const dir = reachableTempDir();
      const path = await realDatabase(dir);
      chmodSync(dir, 0o777); // SQLite could create its -wal and -shm here: it must not
      chmodSync(path, 0o444);
      const before = stateOf(path);
      expect(openInProcess(asUnprivileged, path).code).toBe("DB_READ_ONLY");
      expectUnchanged(path, before);
    },
  );

  test.skipIf(unprivilegedUnavailable !== undefined)("a writable file in a directory this user may not write is DB_READ_ONLY", async () => {
    const dir = reachableTempDir();
    const path = await realDatabase(dir);
    chmodSync(path, 0o666);
    chmodSync(dir, 0o555);
    const before = stateOf(path);
    expect(openInProcess(asUnprivileged, path).code).toBe("DB_READ_ONLY");
    expectUnchanged(path, before);
  });

  test.skipIf(otherUserUnavailable !== undefined)(
    "a writable file whose WAL another user's killed process left behind is DB_READ_ONLY naming the WAL, and is left as it was",
    async () => {
      const dir = reachableTempDir();
      const path = await realDatabase(dir);
      // This user's process writes and is killed: its -wal and -shm stay, writable by this user only.
      const writer = `import { Database } from "bun:sqlite"; const db = new Database(process.argv[1]); db.exec("INSERT INTO _smithers_events (run_id, seq, timestamp_ms, type, payload_json) VALUES ('r1', 999, 0, 'X', '{}')"); process.kill(process.pid, "SIGKILL");`;
      Bun.spawnSync([process.execPath, "-e", writer, path]);
      chmodSync(dir, 0o777);
      chmodSync(path, 0o666);
      const before = stateOf(path);
      expect(before.dir).toEqual(["real.db", "real.db-shm", "real.db-wal"]);
      const walBefore = readFileSync(`${path}-wal`);
      const refused = openInProcess(asUnprivileged, path);
      expect(refused.code).toBe("DB_READ_ONLY");
      expect(refused.message).toContain(`${path}-wal beside it is not writable`);
      expectUnchanged(path, before);
      expect(readFileSync(`${path}-wal`).equals(walBefore)).toBe(true);
    },
  );

  test.skipIf(readOnlyFsUnavailable !== undefined)("a database on a read-only file system is DB_READ_ONLY even for root", async () => {
    const dir = tempDir();
    const path = await realDatabase(dir);
    mkdirSync(join(dir, "empty"));
    const before = stateOf(path);
    expect(openInProcess(onReadOnlyFs(dir), path).code).toBe("DB_READ_ONLY");
    // A new file on a read-only file system cannot be made either.
    expect(openInProcess(onReadOnlyFs(dir), join(dir, "empty", "new.db")).code).toBe("DB_READ_ONLY");
    expectUnchanged(path, before);
    expect(readdirSync(join(dir, "empty"))).toEqual([]);
  });
});
