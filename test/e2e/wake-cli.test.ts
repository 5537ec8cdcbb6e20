/**
 * A waiting run started by one process is woken by whichever Smithers process is running on the
 * same SQLite file: `smithers serve` (its own worker) and `smithers worker --workflows DIR`.
 * Each of these processes uses one connection for everything it runs (a second one to the same
 * file inside the process stalled on the first one's write lock: issue 31).
 */
import { afterEach, describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sql, tempDbPath, tempDir } from "../helpers.ts";
import { cli, root, smithers } from "./cli-helpers.ts";

const WAKE = "test/fixtures/wake";

type Daemon = { proc: ReturnType<typeof Bun.spawn>; output: () => string };
const daemons: Daemon[] = [];
afterEach(async () => {
  for (const d of daemons.splice(0)) {
    d.proc.kill("SIGKILL");
    await d.proc.exited;
  }
});

/** Starts a long-running `smithers …` and resolves once its output shows `marker`; its output is kept for later checks. */
async function start(args: string[], env: Record<string, string>, marker: RegExp): Promise<Daemon & { match: RegExpMatchArray }> {
  const proc = Bun.spawn([process.execPath, cli, ...args], { cwd: root, env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  let seen = "";
  const decoder = new TextDecoder();
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) seen += decoder.decode(chunk);
  };
  void pump(proc.stdout as ReadableStream<Uint8Array>);
  void pump(proc.stderr as ReadableStream<Uint8Array>);
  const daemon = { proc, output: () => seen };
  daemons.push(daemon);
  const deadline = Date.now() + 15_000;
  while (!marker.test(seen)) {
    if (Date.now() > deadline || proc.exitCode !== null) throw new Error(`smithers ${args[0]} did not show ${marker}: ${seen}`);
    await Bun.sleep(20);
  }
  return { ...daemon, match: seen.match(marker)! };
}

const serve = async (db: string, env: Record<string, string> = {}) => {
  const d = await start(["serve", "--db", db, "--workflows", WAKE, "--port", "0"], env, /listening on (http:\/\/\S+)/);
  return { ...d, url: d.match[1]! };
};

const status = (db: string, runId: string) => sql<{ status: string }>(db, "SELECT status FROM _smithers_runs WHERE run_id = ?", runId)[0]?.status;

/** Waits until the run has `expected` status; returns the status it has at the deadline otherwise. */
async function until(db: string, runId: string, expected: string, ms: number): Promise<string | undefined> {
  const deadline = Date.now() + ms;
  while (status(db, runId) !== expected && Date.now() < deadline) await Bun.sleep(25);
  return status(db, runId);
}

const calls = (file: string) => (existsSync(file) ? readFileSync(file, "utf8").trim().split("\n") : []);
const post = (url: string, body: unknown) => fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

/** The server's worker looks for due runs once a second when nothing else wakes it. */
const WAKE_WITHIN_MS = 5_000;

describe("smithers serve wakes runs another process started", () => {
  test("an approval decided through POST /runs/:id/approve resumes the run, its tasks once", async () => {
    const db = tempDbPath();
    const env = { CALLS_FILE: `${db}.calls` };
    expect(smithers(["up", `${WAKE}/gate.tsx`, "--db", db, "--run-id", "g1"], env).code).toBe(3);
    const server = await serve(db, env);
    const res = await post(`${server.url}/runs/g1/approve`, { by: "ada" });
    expect(res.status).toBe(200);
    expect(await until(db, "g1", "finished", WAKE_WITHIN_MS)).toBe("finished");
    expect(calls(env.CALLS_FILE)).toEqual(["build", "deploy"]);
    expect(server.output()).not.toContain("database is locked");
  });

  test("a timer that falls due while the server runs resumes the run once", async () => {
    const db = tempDbPath();
    const env = { CALLS_FILE: `${db}.calls` };
    expect(smithers(["up", `${WAKE}/timer.tsx`, "--db", db, "--run-id", "t1"], env).code).toBe(3);
    expect(status(db, "t1")).toBe("waiting-timer");
    await serve(db, env);
    expect(await until(db, "t1", "finished", 5_200 + WAKE_WITHIN_MS)).toBe("finished");
    expect(calls(env.CALLS_FILE)).toEqual(["before", "after"]);
  }, 20_000);

  test("a signal sent through POST /runs/:id/signals resumes the run with its payload", async () => {
    const db = tempDbPath();
    const env = { CALLS_FILE: `${db}.calls` };
    expect(smithers(["up", `${WAKE}/signal.tsx`, "--db", db, "--run-id", "s1"], env).code).toBe(3);
    const server = await serve(db, env);
    expect((await post(`${server.url}/runs/s1/signals`, { name: "go", data: { who: "ada" } })).status).toBe(200);
    expect(await until(db, "s1", "finished", WAKE_WITHIN_MS)).toBe("finished");
    expect(sql(db, "SELECT text FROM thanks")).toEqual([{ text: "thanks, ada" }]);
    expect(calls(env.CALLS_FILE)).toEqual(["thank"]);
  });

  test("after a restart the server wakes runs decided while it was down, and runs decided after", async () => {
    const db = tempDbPath();
    const env = { CALLS_FILE: `${db}.calls` };
    const first = await serve(db, env);
    expect(smithers(["up", `${WAKE}/gate.tsx`, "--db", db, "--run-id", "before"], env).code).toBe(3);
    first.proc.kill("SIGTERM");
    expect(await first.proc.exited).toBe(0);
    expect(smithers(["approve", "before", "--yes", "--db", db]).code).toBe(0);
    expect(smithers(["up", `${WAKE}/gate.tsx`, "--db", db, "--run-id", "after"], env).code).toBe(3);
    const second = await serve(db, env);
    expect(await until(db, "before", "finished", WAKE_WITHIN_MS)).toBe("finished");
    expect(status(db, "after")).toBe("waiting-approval");
    expect((await post(`${second.url}/runs/after/approve`, {})).status).toBe(200);
    expect(await until(db, "after", "finished", WAKE_WITHIN_MS)).toBe("finished");
    expect(calls(env.CALLS_FILE).sort()).toEqual(["build", "build", "deploy", "deploy"]);
  });
});

test("a run serve cannot resume (its workflow changed since) is logged, journalled and shown by ps, and stays due", async () => {
  const db = tempDbPath();
  const dir = tempDir(); // a project beside the repository, depending on it as an install would
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(root, join(dir, "node_modules", "smithers-workflows"));
  symlinkSync(join(root, "node_modules", "zod"), join(dir, "node_modules", "zod"));
  const file = join(dir, "gate.tsx");
  copyFileSync(join(root, WAKE, "gate.tsx"), file);
  expect(smithers(["up", file, "--db", db, "--run-id", "changed"]).code).toBe(3);
  writeFileSync(file, readFileSync(file, "utf8").replace('record("deploy")', 'record("deploy-v2")'));
  const server = await start(["serve", "--db", db, "--workflows", dir, "--port", "0"], {}, /listening on (http:\/\/\S+)/);
  expect((await post(`${server.match[1]}/runs/changed/approve`, {})).status).toBe(200);
  const deadline = Date.now() + WAKE_WITHIN_MS;
  while (!server.output().includes("WORKFLOW_CHANGED") && Date.now() < deadline) await Bun.sleep(25);
  expect(server.output()).toContain("run changed");
  expect(server.output()).toContain("WORKFLOW_CHANGED");
  expect(status(db, "changed")).toBe("waiting-approval");
  const ps = smithers(["ps", "--db", db]);
  expect(ps.stdout).toMatch(/! changed: resuming failed at .*WORKFLOW_CHANGED/);
  const [failure] = sql<{ payload_json: string }>(db, "SELECT payload_json FROM _smithers_events WHERE run_id = 'changed' AND type = 'RunResumeFailed'");
  expect(JSON.parse(failure!.payload_json).reason).toContain("WORKFLOW_CHANGED");
});

test("smithers worker --workflows wakes an approved run another process started, without a lock error", async () => {
  const db = tempDbPath();
  const env = { CALLS_FILE: `${db}.calls` };
  expect(smithers(["up", `${WAKE}/gate.tsx`, "--db", db, "--run-id", "gw"], env).code).toBe(3);
  const worker = await start(["worker", "--db", db, "--workflows", WAKE, "--poll-interval", "100ms"], env, /worker \S+ /);
  expect(smithers(["approve", "gw", "--yes", "--db", db]).code).toBe(0);
  expect(await until(db, "gw", "finished", WAKE_WITHIN_MS)).toBe("finished");
  expect(calls(env.CALLS_FILE)).toEqual(["build", "deploy"]);
  expect(worker.output()).not.toMatch(/released|database is locked/);
});
