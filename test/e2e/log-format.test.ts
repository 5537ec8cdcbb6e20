/** `--log-format json` and SMITHERS_LOG_FORMAT=json on up, worker, supervise and serve, run as real processes. */
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { execute, sql, tempDbPath } from "../helpers.ts";
import { cli, root, smithers } from "./cli-helpers.ts";

type Line = { time: string; level: string; msg: string; [key: string]: unknown };

/** Every non-empty line of `text` parsed as one JSON object with an ISO time, a level and a message. */
function jsonLines(text: string): Line[] {
  const lines = text.split("\n").filter((l) => l !== "");
  return lines.map((l) => {
    const line = JSON.parse(l) as Line;
    expect(new Date(line.time).toISOString()).toBe(line.time);
    expect(["debug", "info", "warn", "error"]).toContain(line.level);
    expect(typeof line.msg).toBe("string");
    return line;
  });
}

const steps = (label: string) => ["up", "test/fixtures/steps.tsx", "--input", JSON.stringify({ label })];
const { SMITHERS_LOG_FORMAT: _unset, ...cleanEnv } = process.env;

describe("up", () => {
  test("--log-format json: a line per task start and finish with run, node, iteration and attempt; a failure at level error with its code, on stderr too", () => {
    const db = tempDbPath();
    const r = smithers([...steps("j"), "--db", db, "--run-id", "lj", "--log-format", "json"], { STEP_C: "fail" });
    expect(r.code).toBe(1);
    const out = jsonLines(r.stdout);
    const tasks = out.filter((l) => l.event === "NodeStarted" || l.event === "NodeFinished");
    expect(tasks.map((l) => [l.event, l.nodeId])).toEqual([
      ["NodeStarted", "a"],
      ["NodeFinished", "a"],
      ["NodeStarted", "b"],
      ["NodeFinished", "b"],
      ["NodeStarted", "c"],
    ]);
    for (const l of tasks) expect([l.level, l.runId, l.iteration, l.attempt]).toEqual(["info", "lj", 0, 1]);
    const failed = out.find((l) => l.event === "NodeFailed")!;
    expect(failed).toMatchObject({ level: "error", runId: "lj", nodeId: "c", iteration: 0, attempt: 1, code: "TASK_FAILED" });
    expect(out.at(-1)).toMatchObject({ level: "error", msg: "run lj failed", runId: "lj", status: "failed", code: "TASK_FAILED" });
    const [err] = jsonLines(r.stderr);
    expect(err).toMatchObject({ level: "error", runId: "lj", code: "TASK_FAILED", at: expect.stringContaining("test/fixtures/steps.tsx:") });
    expect(err!.msg).toContain("c failed on purpose");
    // The lines carry what the database recorded.
    expect(sql(db, "SELECT node_id, attempt FROM _smithers_attempts WHERE state = 'failed'")).toEqual([{ node_id: "c", attempt: 1 }]);
  });

  test("SMITHERS_LOG_FORMAT=json: the same lines; the finished run's output follows them unchanged", () => {
    const r = smithers([...steps("e"), "--db", tempDbPath(), "--run-id", "le"], { SMITHERS_LOG_FORMAT: "json" });
    expect(r.code).toBe(0);
    const [logs, output] = r.stdout.split("\n{\n");
    const lines = jsonLines(logs!);
    expect(lines.filter((l) => l.event === "NodeFinished").map((l) => l.nodeId)).toEqual(["a", "b", "c"]);
    expect(lines.at(-1)).toMatchObject({ level: "info", msg: "run le finished", runId: "le", status: "finished" });
    expect(JSON.parse(`{\n${output}`)).toEqual({ label: "e", order: 3 });
    expect(r.stderr).toBe("");
  });

  test("the flag wins over the variable; text is the default and reads as before", () => {
    const r = smithers([...steps("t"), "--db", tempDbPath(), "--run-id", "lt", "--log-format", "text"], { SMITHERS_LOG_FORMAT: "json" });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("start   a iter=0 attempt=1\n");
    expect(r.stdout).toContain("run lt finished\n");
  });

  test("any other value is USAGE, exit 2, naming text and json; a JSON command's early error is a JSON line", () => {
    for (const [args, env] of [
      [["--log-format", "xml"], {}],
      [[], { SMITHERS_LOG_FORMAT: "yaml" }],
    ] as const) {
      const r = smithers([...steps("u"), "--db", tempDbPath(), ...args], env);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("USAGE");
      expect(r.stderr).toContain("must be text or json");
    }
    const early = smithers(["up", "test/fixtures/steps.tsx", "--max-concurrency", "0", "--log-format", "json"]);
    expect(early.code).toBe(2);
    expect(jsonLines(early.stderr)).toEqual([expect.objectContaining({ level: "error", code: "USAGE", usage: expect.stringContaining("smithers up") })]);
  });
});

test("worker --log-format json: its start line, each task's lines and the run's outcome, one JSON object per stdout line", async () => {
  const db = tempDbPath();
  expect(smithers([...steps("w"), "--detach", "--run-id", "wq", "--db", db]).code).toBe(0);
  const worker = Bun.spawn([process.execPath, cli, "worker", "--db", db, "--poll-interval", "100ms", "--log-format", "json"], {
    cwd: root,
    env: cleanEnv,
    stdout: "pipe",
    stderr: "pipe",
  });
  const deadline = Date.now() + 15_000;
  while (sql<{ status: string }>(db, "SELECT status FROM _smithers_runs WHERE run_id = 'wq'")[0]?.status !== "finished") {
    if (Date.now() > deadline) throw new Error("the worker did not finish the run");
    await Bun.sleep(50);
  }
  worker.kill("SIGTERM");
  expect(await worker.exited).toBe(0);
  const out = jsonLines(await new Response(worker.stdout).text());
  expect(out[0]).toMatchObject({ level: "info", workerId: expect.any(String) });
  expect(out.find((l) => l.event === "NodeStarted" && l.nodeId === "b")).toMatchObject({ runId: "wq", iteration: 0, attempt: 1 });
  expect(out.find((l) => l.outcome === "ran")).toMatchObject({ level: "info", runId: "wq", msg: "ran wq finished" });
  // SIGTERM's line is JSON too, on stderr.
  expect(jsonLines(await new Response(worker.stderr).text())).toEqual([
    expect.objectContaining({ level: "warn", msg: expect.stringContaining("taking no more runs") }),
  ]);
});

test("supervise with SMITHERS_LOG_FORMAT=json: a resumed run that fails is one line at level error with its code", async () => {
  const db = tempDbPath();
  // A run whose task c (noRetry) failed, left running by an owner that stopped heartbeating: supervise resumes it, and it fails again.
  expect(smithers([...steps("s"), "--run-id", "sv", "--db", db], { STEP_C: "fail" }).code).toBe(1);
  await execute(
    db,
    "UPDATE _smithers_runs SET status = 'running', runtime_owner_id = 'elsewhere:999999:x', heartbeat_at_ms = 0, finished_at_ms = NULL, error_json = NULL",
  );
  const pass = smithers(["supervise", "--db", db], { SMITHERS_LOG_FORMAT: "json" });
  expect(pass.code).toBe(1);
  expect(jsonLines(pass.stdout).at(-1)).toMatchObject({
    outcome: "resumed",
    runId: "sv",
    msg: "resumed sv failed TASK_FAILED",
    level: "error",
    code: "TASK_FAILED",
  });
  // Nothing left to do on a second pass: its one line.
  const empty = smithers(["supervise", "--db", db, "--log-format", "json"]);
  expect(jsonLines(empty.stdout)).toEqual([expect.objectContaining({ level: "info", msg: "no stale runs, no due waits, no due cron slots" })]);
});

test("serve --log-format json: its listening line on stdout, the --token warning on stderr at level warn", async () => {
  const proc = Bun.spawn([process.execPath, cli, "serve", "--port", "0", "--db", tempDbPath(), "--token", "a-token-of-enough-length", "--log-format", "json"], {
    cwd: root,
    env: cleanEnv,
    stdout: "pipe",
    stderr: "pipe",
  });
  const decoder = new TextDecoder();
  let seen = "";
  for await (const chunk of proc.stdout) {
    seen += decoder.decode(chunk);
    if (seen.includes("dashboard")) break;
  }
  proc.kill("SIGTERM");
  expect(await proc.exited).toBe(0);
  const out = jsonLines(seen);
  expect(out[0]).toMatchObject({ level: "info", url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/) });
  const err = jsonLines(await new Response(proc.stderr).text());
  expect(err[0]).toMatchObject({ level: "warn", msg: expect.stringContaining("--token is readable by every user") });
});

test("--log-format json: the engine's own warnings (a column on disk the schema no longer has) are JSON lines on stderr at level warn", () => {
  const db = tempDbPath();
  expect(smithers([...steps("w"), "--db", db, "--run-id", "lw1"], cleanEnv as Record<string, string>).code).toBe(0);
  const file = new Database(db);
  file.run("ALTER TABLE step ADD COLUMN retired TEXT");
  file.close();
  const r = smithers([...steps("w"), "--db", db, "--run-id", "lw2", "--log-format", "json"], cleanEnv as Record<string, string>);
  expect(r.code).toBe(0);
  expect(jsonLines(r.stderr)).toEqual([expect.objectContaining({ level: "warn", msg: "column step.retired is no longer in the schema; kept on disk" })]);
});
