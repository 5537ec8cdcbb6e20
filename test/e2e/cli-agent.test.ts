/**
 * A coding-agent CLI under the engine, as real processes: the code-review example with and
 * without `claude` on PATH (the fake one here), and kill -9 of the engine while the CLI runs:
 * its process group outlives the engine, and the resume ends it before retrying.
 */
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { dirname } from "node:path";
import { processAlive } from "../../src/agents/cli/index.ts";
import { fakeCli } from "../agents/cli/fake-cli.ts";
import { sql, tempDbPath, waitFor } from "../helpers.ts";
import { smithers, startUntil } from "./cli-helpers.ts";

const REVIEW = JSON.stringify({ summary: "Two risks", findings: [{ file: "src/a.ts", issue: "unchecked input", severity: "high" }], reviewedBy: "claude" });

describe("examples/code-review.tsx", () => {
  test("with claude on PATH it reviews with ClaudeCodeAgent: its text streams, its cost is recorded", () => {
    const db = tempDbPath();
    const fake = fakeCli("ok", { FAKE_CLI_TEXT: REVIEW });
    const up = smithers(["up", "examples/code-review.tsx", "--run-id", "cr1", "--db", db, "--input", '{"path":"src"}'], fake.env);
    expect(up.stderr).toContain("reviewing with ClaudeCodeAgent");
    expect(up.code).toBe(0);
    expect(up.stdout).toContain("agent   review:");
    expect(sql(db, "SELECT reviewed_by, json_extract(findings, '$[0].file') AS file FROM review")).toEqual([{ reviewed_by: "claude", file: "src/a.ts" }]);
    expect(sql(db, "SELECT cost_usd > 0 AS paid, input_tokens > 0 AS counted FROM _smithers_attempts")).toEqual([{ paid: 1, counted: 1 }]);
    // The CLI got the example's read-only tool set and the prompt on stdin.
    const record = fake.record();
    expect(record.argv).toEqual(expect.arrayContaining(["--permission-mode", "default", "--allowedTools", "Read", "Grep", "Glob"]));
    expect(record.stdin).toContain("Review the code under src");
  });

  test("without claude on PATH it uses the scripted reviewer and says so", () => {
    const db = tempDbPath();
    const up = smithers(["up", "examples/code-review.tsx", "--run-id", "cr2", "--db", db], { PATH: `${dirname(process.execPath)}:/usr/bin:/bin` });
    expect(up.code).toBe(0);
    expect(up.stderr).toContain("reviewing with a scripted agent (claude not on PATH)");
    expect(sql(db, "SELECT reviewed_by FROM review")).toEqual([{ reviewed_by: "scripted" }]);
  });
});

test("kill -9 of the engine while a CLI agent runs: the resume ends the leftover process group, then retries", async () => {
  const db = tempDbPath();
  const hanging = fakeCli("hang-with-grandchild", { FAKE_CLI_TEXT: REVIEW });
  const engine = await startUntil(["up", "examples/code-review.tsx", "--run-id", "k1", "--db", db], hanging.env, "start   review");
  await waitFor(
    () => existsSync(hanging.env.FAKE_CLI_PID_FILE) && sql(db, "SELECT agent_pid FROM _smithers_attempts WHERE agent_pid IS NOT NULL").length === 1,
  );
  const { pid, grandchild } = hanging.pids();
  expect(sql(db, "SELECT agent_pid FROM _smithers_attempts")).toEqual([{ agent_pid: pid }]);
  engine.kill("SIGKILL");
  await engine.exited;
  // Its own process group: the CLI and its child outlive the engine.
  expect(processAlive(pid)).toBe(true);
  expect(processAlive(grandchild!)).toBe(true);

  const ok = fakeCli("ok", { FAKE_CLI_TEXT: REVIEW });
  const resumed = smithers(["up", "examples/code-review.tsx", "--run-id", "k1", "--resume", "--db", db], ok.env);
  expect(resumed.code).toBe(0);
  expect(resumed.stdout).toContain("abandon review iter=0 attempt=1: its process died while it ran");
  await waitFor(() => !processAlive(pid) && !processAlive(grandchild!));
  const abandoned = sql<{ payload_json: string }>(db, "SELECT payload_json FROM _smithers_events WHERE type = 'NodeAbandoned'");
  expect(JSON.parse(abandoned[0]!.payload_json)).toMatchObject({ nodeId: "review", attempt: 1, reason: "process-died", killedAgentPid: pid });
  expect(sql(db, "SELECT attempt, state FROM _smithers_attempts ORDER BY attempt")).toEqual([
    { attempt: 1, state: "abandoned" },
    { attempt: 2, state: "finished" },
  ]);
});

test("Ctrl-C of smithers up while a CLI agent runs ends its whole group and the run is cancelled", async () => {
  const db = tempDbPath();
  const hanging = fakeCli("hang-with-grandchild", { FAKE_CLI_TEXT: REVIEW });
  const engine = await startUntil(["up", "examples/code-review.tsx", "--run-id", "c1", "--db", db], hanging.env, "start   review");
  await waitFor(() => existsSync(hanging.env.FAKE_CLI_PID_FILE));
  const { pid, grandchild } = hanging.pids();
  engine.kill("SIGINT");
  expect(await engine.exited).toBe(130);
  await waitFor(() => !processAlive(pid) && !processAlive(grandchild!));
  expect(sql(db, "SELECT status FROM _smithers_runs")).toEqual([{ status: "cancelled" }]);
  expect(sql(db, "SELECT state FROM _smithers_attempts")).toEqual([{ state: "cancelled" }]);
});
