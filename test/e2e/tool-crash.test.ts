/**
 * kill -9 of the engine after a side-effect tool ran and before its attempt ended; the resume
 * retries the attempt, the agent asks for the same call, and the journal answers it: the effect
 * happened once.
 */
import { expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { smithers, startUntil } from "./cli-helpers.ts";
import { sql, tempDbPath, waitFor } from "../helpers.ts";

test("kill -9 between a side-effect tool's execution and the attempt's end: after resume the effect happened once", async () => {
  const db = tempDbPath();
  const dir = dirname(db);
  const env = { EFFECT_FILE: join(dir, "effects.log"), MARKER: join(dir, "tool-ran"), HANG: "1" };
  const engine = await startUntil(["up", "test/fixtures/tool-crash.tsx", "--run-id", "k1", "--db", db], env, "start   pay");
  await waitFor(() => existsSync(env.MARKER));
  engine.kill("SIGKILL");
  await engine.exited;
  expect(readFileSync(env.EFFECT_FILE, "utf8").trim().split("\n")).toEqual([expect.stringMatching(/^500 k1:pay:0:charge:[0-9a-f]{12}:0 uncertain=false$/)]);
  expect(sql(db, "SELECT attempt, status FROM _smithers_tool_calls")).toEqual([{ attempt: 1, status: "succeeded" }]);

  const resumed = smithers(["up", "test/fixtures/tool-crash.tsx", "--run-id", "k1", "--resume", "--db", db], { ...env, HANG: "0" });
  expect(resumed.code).toBe(0);
  expect(resumed.stdout).toContain("run k1 finished");
  // Once: the retried attempt's identical call was answered from the journal.
  expect(readFileSync(env.EFFECT_FILE, "utf8").trim().split("\n")).toHaveLength(1);
  expect(sql(db, "SELECT attempt, status, output_json FROM _smithers_tool_calls ORDER BY attempt")).toEqual([
    { attempt: 1, status: "succeeded", output_json: '{"receipt":"r-1"}' },
    { attempt: 2, status: "replayed", output_json: '{"receipt":"r-1"}' },
  ]);
  expect(sql(db, "SELECT attempt, state FROM _smithers_attempts ORDER BY attempt")).toEqual([
    { attempt: 1, state: "abandoned" },
    { attempt: 2, state: "finished" },
  ]);
  expect(sql(db, "SELECT charged FROM receipt")).toEqual([{ charged: 1 }]);
});

test("kill -9 while the tool runs (intent recorded, outcome not): the resumed call is told uncertain and gets the same key", async () => {
  const db = tempDbPath();
  const dir = dirname(db);
  const env = { EFFECT_FILE: join(dir, "effects.log"), MARKER: join(dir, "tool-running"), HANG: "tool" };
  const engine = await startUntil(["up", "test/fixtures/tool-crash.tsx", "--run-id", "k2", "--db", db], env, "start   pay");
  await waitFor(() => existsSync(env.MARKER));
  engine.kill("SIGKILL");
  await engine.exited;
  expect(sql(db, "SELECT attempt, status FROM _smithers_tool_calls")).toEqual([{ attempt: 1, status: "started" }]);

  const resumed = smithers(["up", "test/fixtures/tool-crash.tsx", "--run-id", "k2", "--resume", "--db", db], { ...env, HANG: "0" });
  expect(resumed.code).toBe(0);
  // The external system sees the same key twice, the second time flagged: it can refuse the duplicate.
  const [first, second] = readFileSync(env.EFFECT_FILE, "utf8").trim().split("\n");
  expect(first).toMatch(/^500 k2:pay:0:charge:[0-9a-f]{12}:0 uncertain=false$/);
  expect(second).toBe(first!.replace("uncertain=false", "uncertain=true"));
  expect(sql(db, "SELECT attempt, status FROM _smithers_tool_calls ORDER BY attempt")).toEqual([
    { attempt: 1, status: "started" },
    { attempt: 2, status: "succeeded" },
  ]);
});
