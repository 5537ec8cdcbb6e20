/**
 * The CLI pointed at a database that cannot serve: `up`, `ps`, `inspect`, `serve` and `worker` each exit
 * 2 with one line, `smithers: <CODE>: <what is wrong; what to do>`, never a SQLiteError stack, and
 * the file keeps its bytes and mtime with nothing created beside it.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { onPostgres, tempDir } from "../helpers.ts";
import { asUnprivileged, onReadOnlyFs, readOnlyFsUnavailable, unprivilegedUnavailable } from "../support/restricted.ts";
import { cli, root, smithers, smithersAsync } from "./cli-helpers.ts";

/** Every command that opens the database, as a user would type it. */
const COMMANDS = (db: string): string[][] => [
  ["up", "test/fixtures/steps.tsx", "--input", '{"label":"x"}', "--db", db],
  ["ps", "--db", db],
  ["inspect", "some-run", "--db", db],
  ["serve", "--db", db, "--port", "0"],
  ["worker", "--db", db],
];

/** Runs `smithers args…` behind `prefix` (another user, a read-only mount) with an environment that points at no database. */
function smithersAs(prefix: string[], args: string[]) {
  const env: Record<string, string | undefined> = { ...process.env, SMITHERS_DATABASE_URL: undefined, SMITHERS_DB_PATH: undefined };
  const proc = Bun.spawnSync([...prefix, process.execPath, cli, ...args], { cwd: root, env, stdout: "pipe", stderr: "pipe", timeout: 15_000 });
  return { code: proc.exitCode, stdout: proc.stdout.toString(), stderr: proc.stderr.toString() };
}

type FileState = { bytes: Buffer; mtimeMs: number; dir: string[] };
const stateOf = (path: string): FileState => ({ bytes: readFileSync(path), mtimeMs: statSync(path).mtimeMs, dir: readdirSync(dirname(path)).sort() });

/** Exit 2 and one line `smithers: <code>: …`, never a stack frame. */
function expectOneLine(r: { code: number | null; stderr: string }, code: string, command: string): string {
  const lines = r.stderr.trim().split("\n");
  expect({ command, code: r.code, lines: lines.length }).toEqual({ command, code: 2, lines: 1 });
  expect(lines[0]).toStartWith(`smithers: ${code}: `);
  expect(r.stderr).not.toMatch(/^\s+at /m);
  return lines[0]!;
}

/** Each command exits 2 with the one line for `code`, naming the file; the file is as it was. */
function expectRefusedByEveryCommand(path: string, code: string, prefix: string[] = []): void {
  const before = stateOf(path);
  for (const args of COMMANDS(path)) {
    const r = smithersAs(prefix, args);
    expect(expectOneLine(r, code, args[0]!)).toContain(path);
    expect(r.stderr).not.toContain("SQLiteError");
  }
  const after = stateOf(path);
  expect(after.bytes.equals(before.bytes)).toBe(true);
  expect(after.mtimeMs).toBe(before.mtimeMs);
  expect(after.dir).toEqual(before.dir);
}

/** A real database (a finished run in it), every page in the file. */
function realDatabase(dir: string): string {
  const path = join(dir, "real.db");
  expect(smithers(["up", "test/fixtures/steps.tsx", "--input", '{"label":"x"}', "--db", path, "--run-id", "r1"]).code).toBe(0);
  expect(readdirSync(dir)).toEqual(["real.db"]); // the process ended: its WAL was folded into the file
  return path;
}

describe.skipIf(onPostgres)("the CLI on a database file that cannot serve", () => {
  test("a text file: up, ps, inspect, serve and worker exit 2 with DB_NOT_A_DATABASE and leave it as it was", () => {
    const path = join(tempDir(), "notes.txt");
    writeFileSync(path, "not a database, just notes\n".repeat(20));
    expectRefusedByEveryCommand(path, "DB_NOT_A_DATABASE");
  });

  test("a database cut in half: up, ps, inspect, serve and worker exit 2 with DB_CORRUPT and leave it as it was", () => {
    const dir = tempDir();
    const whole = readFileSync(realDatabase(dir));
    const path = join(dir, "cut.db");
    writeFileSync(path, whole.subarray(0, Math.floor(whole.length / 2)));
    expectRefusedByEveryCommand(path, "DB_CORRUPT");
  });

  test("a new database in directories that do not exist: up makes them and runs", () => {
    const dir = tempDir();
    const path = join(dir, "data", "runs.db");
    const r = smithers(COMMANDS(path)[0]!);
    expect([r.code, r.stderr]).toEqual([0, ""]);
    expect(readdirSync(join(dir, "data"))).toEqual(["runs.db"]);
  });

  test("a path below a regular file: up and serve exit 2 with DB_OPEN_FAILED naming the file, the readers with RUN_NOT_FOUND", () => {
    const dir = tempDir();
    const file = join(dir, "notes.txt");
    writeFileSync(file, "notes\n");
    const path = join(file, "data", "smithers.db");
    for (const args of [COMMANDS(path)[0]!, COMMANDS(path)[3]!]) {
      expect(expectOneLine(smithersAs([], args), "DB_OPEN_FAILED", args[0]!)).toContain(`${file} is a file, not a directory`);
    }
    // Commands that read an existing database say there is none.
    for (const args of [COMMANDS(path)[1]!, COMMANDS(path)[2]!, COMMANDS(path)[4]!]) expectOneLine(smithersAs([], args), "RUN_NOT_FOUND", args[0]!);
    expect(readdirSync(dir)).toEqual(["notes.txt"]);
  });

  // /sys takes no new entries from any user, root included: a directory that cannot be made without chmod.
  test.skipIf(process.platform !== "linux")("a directory that cannot be made (also as root): up and serve exit 2 with DB_READ_ONLY", () => {
    const path = "/sys/smithers-test/smithers.db";
    for (const args of [COMMANDS(path)[0]!, COMMANDS(path)[3]!]) {
      expect(expectOneLine(smithersAs([], args), "DB_READ_ONLY", args[0]!)).toContain("/sys/smithers-test does not exist and cannot be made");
    }
  });

  test.skipIf(unprivilegedUnavailable !== undefined)("a file the user may not write: up, ps, inspect, serve and worker exit 2 with DB_READ_ONLY", () => {
    const dir = tempDir();
    const path = realDatabase(dir);
    chmodSync(dirname(dir), 0o711); // the suite's private temp root: enterable by that user
    chmodSync(dir, 0o777); // SQLite could create a WAL beside it: nothing may be
    chmodSync(path, 0o444);
    expectRefusedByEveryCommand(path, "DB_READ_ONLY", asUnprivileged);
  });

  test.skipIf(readOnlyFsUnavailable !== undefined)(
    "a database on a read-only file system: up, ps, inspect, serve and worker exit 2 with DB_READ_ONLY, also as root",
    () => {
      const dir = tempDir();
      const path = realDatabase(dir);
      expectRefusedByEveryCommand(path, "DB_READ_ONLY", onReadOnlyFs(dir));
    },
  );
});

describe("the CLI on a PostgreSQL server it cannot reach", () => {
  // Port 1 on loopback refuses at once; .invalid never resolves (RFC 2606).
  for (const [what, url] of [
    ["a refused connection", "postgres://smithers@127.0.0.1:1/smithers"],
    ["a host that does not resolve", "postgres://smithers@db.invalid:5432/smithers"],
  ] as const) {
    test(`${what}: up, ps, inspect, serve and worker exit 2 with DB_UNREACHABLE, start the server or fix the URL`, async () => {
      const results = await Promise.all(COMMANDS(url).map((args) => smithersAsync(args, { SMITHERS_DATABASE_URL: "", SMITHERS_DB_PATH: "" })));
      results.forEach((r, i) => {
        const line = expectOneLine(r, "DB_UNREACHABLE", COMMANDS(url)[i]![0]!);
        expect(line).toContain(`Cannot reach PostgreSQL at ${url}`);
        expect(line).toEndWith("start the server, or fix the host and port in --db or $SMITHERS_DATABASE_URL");
      });
    });
  }
});
