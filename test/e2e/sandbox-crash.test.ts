/**
 * kill -9 of the engine while a sandboxed body runs: the session row is left `running` with its
 * directory on disk; the resume closes it (`abandoned`, no exit, the reason) and removes the
 * directory, and the retried attempt gets a session of its own.
 */
import { expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { cli, root, smithers } from "./cli-helpers.ts";
import { sql, tempDbPath, waitFor } from "../helpers.ts";

type Row = {
  sandbox_id: string;
  status: string;
  exit_code: number | null;
  completed_at_ms: number | null;
  root_dir: string | null;
  pid: number | null;
  error_text: string | null;
};
const rows = (db: string) =>
  sql<Row>(db, "SELECT sandbox_id, status, exit_code, completed_at_ms, root_dir, pid, error_text FROM _smithers_sandboxes ORDER BY sandbox_id");

test("a session left running by a kill -9 is closed as abandoned on resume and its directory removed", async () => {
  const db = tempDbPath();
  const args = ["up", "test/fixtures/sandbox-crash.tsx", "--run-id", "sb1", "--db", db];
  const engine = Bun.spawn([process.execPath, cli, ...args], { cwd: root, stdout: "ignore", stderr: "ignore" });
  // The body is running inside bubblewrap once its session has a pid (before that, the table may not exist yet).
  const sessionStarted = () => {
    try {
      return typeof rows(db)[0]?.pid === "number";
    } catch {
      return false;
    }
  };
  await waitFor(sessionStarted, 20_000);
  engine.kill("SIGKILL");
  await engine.exited;
  const [left] = rows(db);
  expect([left?.status, left?.completed_at_ms]).toEqual(["running", null]);
  expect(existsSync(left!.root_dir!)).toBe(true);
  // bubblewrap went down with the engine (--die-with-parent): nothing of the session still runs.
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  await waitFor(() => !alive(left!.pid!));

  const resumed = smithers(["up", "test/fixtures/sandbox-crash.tsx", "--run-id", "sb1", "--resume", "--db", db]);
  expect(resumed.code).toBe(0);
  const [first, second] = rows(db);
  expect([first?.sandbox_id, first?.status, first?.exit_code, typeof first?.completed_at_ms]).toEqual(["boxed:0:1", "abandoned", null, "number"]);
  expect(first?.error_text).toContain("TASK_ABANDONED");
  expect(existsSync(first!.root_dir!)).toBe(false);
  expect([second?.sandbox_id, second?.status, second?.exit_code]).toEqual(["boxed:0:2", "finished", 0]);
  expect(sql(db, "SELECT attempt FROM out")).toEqual([{ attempt: 2 }]);
});
