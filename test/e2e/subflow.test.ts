/** A parent killed with kill -9 while its child run works, then resumed: the same child is resumed, not started again. */
import { expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { sql, tempDbPath } from "../helpers.ts";
import { smithers, smithersAsync, startUntil } from "./cli-helpers.ts";

const calls = (file: string) => (existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : []);

/** Starts the parent, waits until the child's `slow` task runs, and kills the parent's process with SIGKILL. */
async function killDuringChild(dbPath: string, callsFile: string, runId: string) {
  const args = ["up", "test/fixtures/subflow.tsx", "--input", '{"label":"k"}', "--db", dbPath, "--run-id", runId];
  const proc = await startUntil(args, { SUBFLOW_HANG: "1", CALLS_FILE: callsFile }, "start   child");
  for (let i = 0; i < 500 && !calls(callsFile).includes("slow"); i++) await Bun.sleep(20);
  expect(calls(callsFile)).toEqual(["fetch", "slow"]);
  proc.kill("SIGKILL");
  await proc.exited;
}

test("kill -9 of the parent mid-child, then --resume: one child run, its finished task not re-run, the parent finishes", async () => {
  const dbPath = tempDbPath();
  const callsFile = join(dirname(dbPath), "calls.txt");
  await killDuringChild(dbPath, callsFile, "p1");
  expect(sql(dbPath, "SELECT run_id, parent_run_id, status FROM _smithers_runs ORDER BY run_id")).toEqual([
    { run_id: "p1", parent_run_id: null, status: "running" },
    { run_id: "p1/child#0", parent_run_id: "p1", status: "running" },
  ]);

  const resumed = smithers(["up", "test/fixtures/subflow.tsx", "--db", dbPath, "--run-id", "p1", "--resume"], { CALLS_FILE: callsFile });
  expect(resumed.stderr).toBe("");
  expect(resumed.code).toBe(0);
  expect(calls(callsFile)).toEqual(["fetch", "slow", "slow", "report"]);
  expect(sql(dbPath, "SELECT run_id, parent_run_id, status FROM _smithers_runs ORDER BY run_id")).toEqual([
    { run_id: "p1", parent_run_id: null, status: "finished" },
    { run_id: "p1/child#0", parent_run_id: "p1", status: "finished" },
  ]);
  expect(sql(dbPath, "SELECT node_id, attempt, state FROM _smithers_attempts WHERE run_id = 'p1/child#0' ORDER BY node_id, attempt")).toEqual([
    { node_id: "fetch", attempt: 1, state: "finished" },
    { node_id: "slow", attempt: 1, state: "abandoned" },
    { node_id: "slow", attempt: 2, state: "finished" },
  ]);
  expect(sql(dbPath, "SELECT run_id, text FROM child_result")).toEqual([{ run_id: "p1", text: "child of k" }]);
  expect(sql(dbPath, "SELECT line FROM report")).toEqual([{ line: "got: child of k" }]);
}, 60_000);

test("SIGINT of the parent while the child works cancels both runs", async () => {
  const dbPath = tempDbPath();
  const callsFile = join(dirname(dbPath), "calls.txt");
  const args = ["up", "test/fixtures/subflow.tsx", "--input", '{"label":"c"}', "--db", dbPath, "--run-id", "p2"];
  const proc = await startUntil(args, { SUBFLOW_HANG: "1", CALLS_FILE: callsFile }, "start   child");
  for (let i = 0; i < 500 && !calls(callsFile).includes("slow"); i++) await Bun.sleep(20);
  proc.kill("SIGINT");
  expect(await proc.exited).toBe(130);
  expect(sql(dbPath, "SELECT run_id, status FROM _smithers_runs ORDER BY run_id")).toEqual([
    { run_id: "p2", status: "cancelled" },
    { run_id: "p2/child#0", status: "cancelled" },
  ]);
}, 60_000);

test("after kill -9, `smithers supervise` resumes the parent only, and the parent resumes its child", async () => {
  const dbPath = tempDbPath();
  const callsFile = join(dirname(dbPath), "calls.txt");
  await killDuringChild(dbPath, callsFile, "p3");
  const pass = await smithersAsync(["supervise", "--db", dbPath, "--stale-after-ms", "0"], { CALLS_FILE: callsFile });
  expect(pass.code).toBe(0);
  expect(pass.stdout).toContain("p3");
  expect(pass.stdout).not.toContain("p3/child#0");
  expect(calls(callsFile)).toEqual(["fetch", "slow", "slow", "report"]);
  expect(sql(dbPath, "SELECT run_id, status FROM _smithers_runs ORDER BY run_id")).toEqual([
    { run_id: "p3", status: "finished" },
    { run_id: "p3/child#0", status: "finished" },
  ]);
}, 60_000);

test("examples/subflow.tsx: the child's declared result is the parent's row, and the child run is linked", () => {
  const dbPath = tempDbPath();
  const r = smithers(["up", "examples/subflow.tsx", "--input", '{"text":"durable runs wait for the world"}', "--db", dbPath, "--run-id", "ex"]);
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  expect(sql(dbPath, "SELECT run_id, parent_run_id FROM _smithers_runs ORDER BY run_id")).toEqual([
    { run_id: "ex", parent_run_id: null },
    { run_id: "ex/count-words#0", parent_run_id: "ex" },
  ]);
  expect(sql(dbPath, "SELECT run_id, words FROM counted")).toEqual([{ run_id: "ex", words: 6 }]);
  expect(sql(dbPath, "SELECT line FROM report")).toEqual([{ line: "The text has 6 words" }]);
});
