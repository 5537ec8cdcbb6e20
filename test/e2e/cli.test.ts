import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { sql, tempDbPath } from "../helpers.ts";
import { smithers, smithersAsync, startUntil } from "./cli-helpers.ts";

describe("smithers up", () => {
  test("runs examples/bugfix.tsx end to end: progress lines, exit 0, rows queryable with SQL", () => {
    const dbPath = tempDbPath();
    const r = smithers(["up", "examples/bugfix.tsx", "--input", '{"description":"Auth tokens expire silently"}', "--db", dbPath]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const lines = r.stdout.split("\n");
    expect(lines.filter((l) => /^(start|finish) /.test(l)).map((l) => l.replace(/ \d+ms$/, ""))).toEqual([
      "start   analyze iter=0 attempt=1",
      "finish  analyze iter=0 attempt=1",
      "start   fix iter=0 attempt=1",
      "finish  fix iter=0 attempt=1",
    ]);
    expect(lines.find((l) => l.startsWith("finish  fix"))).toMatch(/ \d+ms$/);
    const runId = /^run (\S+) finished$/m.exec(r.stdout)?.[1];
    expect(runId).toBeDefined();
    expect(JSON.parse(r.stdout.slice(r.stdout.indexOf("{")))).toMatchObject({ approved: true });
    expect(sql(dbPath, "SELECT run_id, node_id, iteration, severity, files FROM analysis")).toEqual([
      { run_id: runId!, node_id: "analyze", iteration: 0, severity: "high", files: '["src/auth/refresh.ts"]' },
    ]);
    expect(sql(dbPath, "SELECT node_id, approved FROM fix")).toEqual([{ node_id: "fix", approved: 1 }]);
    expect(sql(dbPath, "SELECT description FROM input WHERE run_id = ?", runId!)).toEqual([{ description: "Auth tokens expire silently" }]);
    // The analyst's prose reply was repaired by the validation retry inside the first attempt.
    expect(sql(dbPath, "SELECT node_id, attempt, state FROM _smithers_attempts ORDER BY started_at_ms")).toEqual([
      { node_id: "analyze", attempt: 1, state: "finished" },
      { node_id: "fix", attempt: 1, state: "finished" },
    ]);
    expect(sql(dbPath, "SELECT status, workflow_name FROM _smithers_runs")).toEqual([{ status: "finished", workflow_name: "bugfix" }]);
  });

  test("malformed --input JSON exits 2 with INVALID_INPUT and creates no run", () => {
    const dbPath = tempDbPath();
    const r = smithers(["up", "examples/bugfix.tsx", "--input", "{not json", "--db", dbPath]);
    expect(r.code).toBe(2);
    expect(r.stderr).toStartWith("smithers: INVALID_INPUT:");
    expect(r.stdout).toBe("");
  });

  test("input that fails the input schema exits 2 with INVALID_INPUT", () => {
    const dbPath = tempDbPath();
    const r = smithers(["up", "examples/bugfix.tsx", "--input", '{"description":""}', "--db", dbPath]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("INVALID_INPUT");
    expect(sql(dbPath, "SELECT count(*) AS n FROM _smithers_runs")).toEqual([{ n: 0 }]);
  });

  test("bad usage exits 2: no file, unknown command, --resume without --run-id, unknown flag", () => {
    expect(smithers(["up"]).code).toBe(2);
    expect(smithers(["launch", "x.tsx"]).code).toBe(2);
    expect(smithers(["up", "examples/hello.tsx", "--resume"]).code).toBe(2);
    const unknown = smithers(["up", "examples/hello.tsx", "--frobnicate"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("USAGE");
    expect(smithers(["up", "examples/does-not-exist.tsx"]).stderr).toContain("WORKFLOW_LOAD_FAILED");
  });

  test("a failed run exits 1; resuming it after the fix exits 0 without re-running finished tasks", () => {
    const dbPath = tempDbPath();
    const callsFile = join(dirname(dbPath), "calls.txt");
    const args = ["up", "test/fixtures/steps.tsx", "--input", '{"label":"x"}', "--db", dbPath, "--run-id", "run-1"];
    const failed = smithers(args, { STEP_B: "fail", CALLS_FILE: callsFile });
    expect(failed.code).toBe(1);
    expect(failed.stdout).toContain("run run-1 failed");
    expect(failed.stderr).toContain("TASK_FAILED");
    const resumed = smithers([...args, "--resume"], { STEP_B: "ok", CALLS_FILE: callsFile });
    expect(resumed.code).toBe(0);
    expect(readFileSync(callsFile, "utf8").trim().split("\n")).toEqual(["a", "b", "b", "c"]);
    expect(sql(dbPath, "SELECT node_id, attempt, state FROM _smithers_attempts ORDER BY node_id, attempt")).toEqual([
      { node_id: "a", attempt: 1, state: "finished" },
      { node_id: "b", attempt: 1, state: "failed" },
      { node_id: "b", attempt: 2, state: "finished" },
      { node_id: "c", attempt: 1, state: "finished" },
    ]);
  });

  test("resuming with a different --input exits 2 with INPUT_MISMATCH", () => {
    const dbPath = tempDbPath();
    const args = ["up", "test/fixtures/steps.tsx", "--db", dbPath, "--run-id", "run-2"];
    expect(smithers([...args, "--input", '{"label":"x"}'], { STEP_B: "fail" }).code).toBe(1);
    const r = smithers([...args, "--input", '{"label":"y"}', "--resume"], { STEP_B: "ok" });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("INPUT_MISMATCH");
    expect(sql(dbPath, "SELECT label FROM input")).toEqual([{ label: "x" }]);
  });
});

describe("Ctrl-C", () => {
  test("SIGINT cancels the run: a task that stops on its signal is recorded cancelled, exit 130", async () => {
    const dbPath = tempDbPath();
    const args = ["up", "test/fixtures/steps.tsx", "--input", '{"label":"i"}', "--db", dbPath, "--run-id", "run-i"];
    const proc = await startUntil(args, { STEP_B: "hang-polite" }, "start   b");
    proc.kill("SIGINT");
    expect(await proc.exited).toBe(130);
    expect(sql(dbPath, "SELECT node_id, state FROM _smithers_attempts ORDER BY node_id")).toEqual([
      { node_id: "a", state: "finished" },
      { node_id: "b", state: "cancelled" },
    ]);
    expect(sql(dbPath, "SELECT status FROM _smithers_runs")).toEqual([{ status: "cancelled" }]);
  });

  test("a task that ignores SIGINT gets --grace-ms to stop, then its attempt is recorded abandoned and the run cancelled", async () => {
    const dbPath = tempDbPath();
    const args = ["up", "test/fixtures/steps.tsx", "--input", '{"label":"i"}', "--db", dbPath, "--run-id", "run-g", "--grace-ms", "200"];
    const proc = await startUntil(args, { STEP_B: "hang" }, "start   b");
    proc.kill("SIGINT");
    expect(await proc.exited).toBe(130);
    expect(sql(dbPath, "SELECT node_id, state FROM _smithers_attempts ORDER BY node_id")).toEqual([
      { node_id: "a", state: "finished" },
      { node_id: "b", state: "abandoned" },
    ]);
    expect(sql(dbPath, "SELECT type FROM _smithers_events WHERE type IN ('NodeAbandoned', 'RunCancelled') ORDER BY seq")).toEqual([
      { type: "NodeAbandoned" },
      { type: "RunCancelled" },
    ]);
    expect(sql(dbPath, "SELECT status FROM _smithers_runs")).toEqual([{ status: "cancelled" }]);
  });

  test("a second SIGINT stops waiting for a task that ignores the first: exit 130 at once, the attempt abandoned", async () => {
    const dbPath = tempDbPath();
    const args = ["up", "test/fixtures/steps.tsx", "--input", '{"label":"i"}', "--db", dbPath, "--run-id", "run-2"];
    const proc = await startUntil(args, { STEP_B: "hang" }, "start   b");
    const signalledAt = performance.now();
    proc.kill("SIGINT");
    const decoder = new TextDecoder();
    let err = "";
    for await (const chunk of proc.stderr) {
      err += decoder.decode(chunk);
      if (err.includes("cancelling")) break;
    }
    proc.kill("SIGINT");
    expect(await proc.exited).toBe(130);
    expect(performance.now() - signalledAt).toBeLessThan(8_000); // well inside the default 10 s grace period
    expect(sql(dbPath, "SELECT node_id, state FROM _smithers_attempts ORDER BY node_id")).toEqual([
      { node_id: "a", state: "finished" },
      { node_id: "b", state: "abandoned" },
    ]);
    expect(sql(dbPath, "SELECT status FROM _smithers_runs")).toEqual([{ status: "cancelled" }]);
  });

  test("--grace-ms that is not a number of milliseconds exits 2 with USAGE", () => {
    const r = smithers(["up", "test/fixtures/steps.tsx", "--input", '{"label":"i"}', "--db", tempDbPath(), "--grace-ms", "soon"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("USAGE");
  });
});

describe("smithers frames", () => {
  test("lists a run's frames with encoding and size, and prints one frame's XML with the task states", () => {
    const dbPath = tempDbPath();
    expect(smithers(["up", "test/fixtures/steps.tsx", "--input", '{"label":"x"}', "--db", dbPath, "--run-id", "run-fr"]).code).toBe(0);
    const list = smithers(["frames", "run-fr", "--db", dbPath]);
    expect(list.code).toBe(0);
    const rows = list.stdout.trim().split("\n");
    expect(rows[0]).toBe("frame  encoding  bytes");
    const stored = sql<{ frame_no: number; encoding: string; bytes: number }>(
      dbPath,
      "SELECT frame_no, encoding, length(CAST(xml_json AS BLOB)) AS bytes FROM _smithers_frames ORDER BY frame_no",
    );
    expect(rows.slice(1, -1).map((r) => r.trim().split(/\s+/))).toEqual(stored.map((f) => [String(f.frame_no), f.encoding, String(f.bytes)]));
    expect(rows.at(-1)).toBe(`${stored.length} frames, ${stored.reduce((n, f) => n + f.bytes, 0)} bytes`);
    const last = smithers(["frames", "run-fr", "--db", dbPath, "--frame", String(stored.length - 1)]);
    expect(last.code).toBe(0);
    expect(last.stdout).toStartWith('<workflow name="steps">');
    expect(last.stdout.match(/state="finished"/g)?.length).toBe(3);
    const first = smithers(["frames", "run-fr", "--db", dbPath, "--frame", "0"]);
    expect(first.stdout).toContain('<task id="a" iteration="=0" state="running"');
  });

  test("an unknown run or frame, or a bad --frame, exits 2 with its code", () => {
    const dbPath = tempDbPath();
    expect(smithers(["up", "test/fixtures/steps.tsx", "--input", '{"label":"x"}', "--db", dbPath, "--run-id", "run-f2"]).code).toBe(0);
    const unknownRun = smithers(["frames", "nope", "--db", dbPath]);
    expect([unknownRun.code, unknownRun.stderr.split(":")[1]?.trim()]).toEqual([2, "RUN_NOT_FOUND"]);
    const unknownFrame = smithers(["frames", "run-f2", "--db", dbPath, "--frame", "999"]);
    expect([unknownFrame.code, unknownFrame.stderr.split(":")[1]?.trim()]).toEqual([2, "FRAME_NOT_FOUND"]);
    const badFrame = smithers(["frames", "run-f2", "--db", dbPath, "--frame", "-3"]);
    expect([badFrame.code, badFrame.stderr.split(":")[1]?.trim()]).toEqual([2, "USAGE"]);
    const noDb = smithers(["frames", "run-f2", "--db", `${dbPath}.missing`]);
    expect(noDb.code).toBe(2);
  });

  test("resuming a run whose owner is alive exits 2 with RUN_STILL_RUNNING", async () => {
    const dbPath = tempDbPath();
    const args = ["up", "test/fixtures/steps.tsx", "--input", '{"label":"x"}', "--db", dbPath, "--run-id", "run-live"];
    const proc = await startUntil(args, { STEP_B: "hang" }, "start   b");
    const second = smithers([...args, "--resume"]);
    proc.kill("SIGKILL");
    await proc.exited;
    expect(second.code).toBe(2);
    expect(second.stderr).toStartWith("smithers: RUN_STILL_RUNNING:");
  });
});

describe("resume after a fix", () => {
  test("a run that fails at its third task, resumed after the cause is fixed, finishes without re-running tasks one and two", () => {
    const dbPath = tempDbPath();
    const callsFile = join(dirname(dbPath), "calls.txt");
    const args = ["up", "test/fixtures/steps.tsx", "--input", '{"label":"f"}', "--db", dbPath, "--run-id", "run-f"];
    const failed = smithers(args, { STEP_C: "fail", CALLS_FILE: callsFile });
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain("c failed on purpose");
    expect(sql(dbPath, "SELECT status FROM _smithers_runs")).toEqual([{ status: "failed" }]);
    const fixed = smithers([...args, "--resume"], { CALLS_FILE: callsFile });
    expect(fixed.code).toBe(0);
    expect(readFileSync(callsFile, "utf8").trim().split("\n")).toEqual(["a", "b", "c", "c"]);
    expect(sql(dbPath, "SELECT node_id, attempt, state FROM _smithers_attempts ORDER BY node_id, attempt")).toEqual([
      { node_id: "a", attempt: 1, state: "finished" },
      { node_id: "b", attempt: 1, state: "finished" },
      { node_id: "c", attempt: 1, state: "failed" },
      { node_id: "c", attempt: 2, state: "finished" },
    ]);
    expect(sql(dbPath, "SELECT node_id, COUNT(*) AS n FROM step GROUP BY node_id ORDER BY node_id")).toEqual([
      { node_id: "a", n: 1 },
      { node_id: "b", n: 1 },
      { node_id: "c", n: 1 },
    ]);
    const seqs = sql<{ seq: number }>(dbPath, "SELECT seq FROM _smithers_events WHERE run_id = 'run-f' ORDER BY seq").map((r) => r.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i));
    const types = sql<{ type: string }>(dbPath, "SELECT type FROM _smithers_events WHERE type LIKE 'Run%' ORDER BY seq").map((r) => r.type);
    expect(types).toEqual(["RunStarted", "RunFailed", "RunResumed", "RunFinished"]);
  });
});

describe("kill -9", () => {
  test("a run killed during a task resumes with every output exactly once and no finished task re-run", async () => {
    const dbPath = tempDbPath();
    const callsFile = join(dirname(dbPath), "calls.txt");
    const args = ["up", "test/fixtures/steps.tsx", "--input", '{"label":"k"}', "--db", dbPath, "--run-id", "run-k"];
    const proc = await startUntil(args, { STEP_B: "hang", CALLS_FILE: callsFile }, "start   b");
    // Kill only once b's work has really begun (its side effect is on disk).
    for (let i = 0; i < 500 && !(existsSync(callsFile) && readFileSync(callsFile, "utf8").includes("b\n")); i++) await Bun.sleep(10);
    proc.kill("SIGKILL");
    await proc.exited;
    expect(sql(dbPath, "SELECT node_id, state FROM _smithers_nodes ORDER BY node_id")).toEqual([
      { node_id: "a", state: "finished" },
      { node_id: "b", state: "running" },
    ]);
    const resumed = smithers([...args, "--resume"], { STEP_B: "ok", CALLS_FILE: callsFile });
    expect(resumed.stderr).toBe("");
    expect(resumed.code).toBe(0);
    expect(readFileSync(callsFile, "utf8").trim().split("\n")).toEqual(["a", "b", "b", "c"]);
    expect(sql(dbPath, 'SELECT node_id, "order" FROM step ORDER BY node_id')).toEqual([
      { node_id: "a", order: 1 },
      { node_id: "b", order: 2 },
      { node_id: "c", order: 3 },
    ]);
    expect(sql(dbPath, "SELECT node_id, attempt, state FROM _smithers_attempts ORDER BY node_id, attempt")).toEqual([
      { node_id: "a", attempt: 1, state: "finished" },
      { node_id: "b", attempt: 1, state: "abandoned" },
      { node_id: "b", attempt: 2, state: "finished" },
      { node_id: "c", attempt: 1, state: "finished" },
    ]);
  });
});

describe("smithers approve / deny", () => {
  test("up exits 3 at the gate; approve shows the request and needs --yes without a terminal; the resumed run finishes", () => {
    const dbPath = tempDbPath();
    const callsFile = `${dbPath}.calls`;
    const up = ["up", "test/fixtures/approval.tsx", "--db", dbPath, "--run-id", "gate-1"];
    const first = smithers(up, { CALLS_FILE: callsFile });
    expect(first.code).toBe(3);
    expect(first.stdout).toContain("run gate-1 waiting-approval");
    const unconfirmed = smithers(["approve", "gate-1", "--db", dbPath]);
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.stdout).toContain("title      Deploy app-1.2.3 to production?");
    expect(unconfirmed.stderr).toContain("--yes");
    expect(sql(dbPath, "SELECT status FROM _smithers_approvals")).toEqual([{ status: "requested" }]);
    const approved = smithers(["approve", "gate-1", "--node", "ship-it", "--by", "ada", "--note", "ship it", "--yes", "--db", dbPath]);
    expect(approved.code).toBe(0);
    expect(sql(dbPath, "SELECT status, decided_by, note FROM _smithers_approvals")).toEqual([{ status: "approved", decided_by: "ada", note: "ship it" }]);
    const resumed = smithers([...up, "--resume"], { CALLS_FILE: callsFile });
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toContain('"url": "https://prod.example"');
    expect(readFileSync(callsFile, "utf8").trim().split("\n")).toEqual(["build", "deploy"]);
    const again = smithers(["deny", "gate-1", "--node", "ship-it", "--yes", "--db", dbPath]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain("APPROVAL_DECIDED");
  });

  test("the daemon wakes a run whose approval was decided: two supervise processes, exactly one resumes it, each task once", async () => {
    const dbPath = tempDbPath();
    const callsFile = `${dbPath}.calls`;
    expect(smithers(["up", "test/fixtures/approval.tsx", "--db", dbPath, "--run-id", "gate-w"], { CALLS_FILE: callsFile }).code).toBe(3);
    // Undecided, a waiting run is not the daemon's to resume.
    expect(smithers(["supervise", "--db", dbPath]).stdout).toContain("no stale runs");
    expect(smithers(["approve", "gate-w", "--yes", "--db", dbPath]).code).toBe(0);
    const args = ["supervise", "--db", dbPath];
    const [one, two] = await Promise.all([smithersAsync(args, { CALLS_FILE: callsFile }), smithersAsync(args, { CALLS_FILE: callsFile })]);
    const resumed = [one, two].filter((r) => r.stdout.includes("resumed gate-w finished"));
    expect(resumed).toHaveLength(1);
    expect(readFileSync(callsFile, "utf8").trim().split("\n")).toEqual(["build", "deploy"]);
    expect(sql(dbPath, "SELECT status FROM _smithers_runs")).toEqual([{ status: "finished" }]);
  });

  test("a select gate shows its options and takes --select (a bad choice exits 2, nothing decided); a needsApproval task is approved like a gate", () => {
    const dbPath = tempDbPath();
    const up = ["up", "test/fixtures/choose.tsx", "--db", dbPath, "--run-id", "pick-1"];
    expect(smithers(up).code).toBe(3);
    const missing = smithers(["approve", "pick-1", "--yes", "--db", dbPath]);
    expect(missing.code).toBe(2);
    expect(missing.stdout).toContain("choose     one option (--select KEY)");
    expect(missing.stdout).toContain("  canary  Canary, 5% first (an hour per step)");
    expect(missing.stderr).toContain("APPROVAL_INVALID");
    const unknown = smithers(["approve", "pick-1", "--select", "half", "--yes", "--db", dbPath]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('"half" is not one of the options; the options are: canary, full');
    expect(smithers(["deny", "pick-1", "--select", "full", "--yes", "--db", dbPath]).code).toBe(2);
    expect(sql(dbPath, "SELECT status FROM _smithers_approvals")).toEqual([{ status: "requested" }]);
    expect(smithers(["approve", "pick-1", "--select", "full", "--yes", "--db", dbPath]).code).toBe(0);
    expect(smithers([...up, "--resume"]).code).toBe(3); // now the task's own gate waits
    const gate = smithers(["approve", "pick-1", "--yes", "--db", dbPath]);
    expect(gate.code).toBe(0);
    expect(gate.stdout).toContain('title      Start task "Ship 1.4"?');
    expect(gate.stdout).toContain("approving lets the task start");
    expect(smithers([...up, "--resume"]).code).toBe(0);
    expect(sql(dbPath, "SELECT plan FROM ship")).toEqual([{ plan: "full" }]);
  }, 20_000); // ten CLI processes one after another: slow on a loaded 2-core machine

  test("deny fails the run at the gate (onDeny fail): the resumed run exits 1 with APPROVAL_DENIED", () => {
    const dbPath = tempDbPath();
    const up = ["up", "test/fixtures/approval.tsx", "--db", dbPath, "--run-id", "gate-2"];
    expect(smithers(up).code).toBe(3);
    expect(smithers(["deny", "gate-2", "--yes", "--note", "freeze", "--db", dbPath]).code).toBe(0);
    const resumed = smithers([...up, "--resume"]);
    expect(resumed.code).toBe(1);
    expect(resumed.stderr).toContain("APPROVAL_DENIED");
    expect(smithers(["approve", "no-such-run", "--yes", "--db", dbPath]).code).toBe(2);
  });
});
