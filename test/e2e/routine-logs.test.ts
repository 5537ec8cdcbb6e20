/**
 * Expected outcomes are one line in the logs of `serve` and `worker`: a denied approval (and the
 * run it fails) is logged as `CODE: message`, without a source excerpt or stack frames, so
 * operators do not take it for a crash. An unexpected error still logs its stack (logText).
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { logText, OutcomeNote } from "../../src/server/queue.ts";
import { SmithersError } from "../../src/errors/index.ts";
import { tempDbPath } from "../helpers.ts";
import { cli, root, smithers } from "./cli-helpers.ts";

const GATE = join(root, "test/fixtures/server");
const STACK_FRAME = /^\s+at /m;
const SOURCE_EXCERPT = /^\s*\d+ \| /m;

/** `smithers args…` in the background, its stdout read until `marker` matches; stop() ends it and resolves with both outputs. */
async function startUntil(args: string[], marker: RegExp) {
  const proc = Bun.spawn([process.execPath, cli, ...args], { cwd: root, env: { ...process.env, SMITHERS_TOKEN: "" }, stdout: "pipe", stderr: "pipe" });
  const stderr = new Response(proc.stderr).text();
  const decoder = new TextDecoder();
  const reader = proc.stdout.getReader();
  let stdout = "";
  const readUntil = async (pattern: RegExp): Promise<RegExpExecArray> => {
    for (;;) {
      const found = pattern.exec(stdout);
      if (found) return found;
      const { value, done } = await reader.read();
      if (done) throw new Error(`${args[0]} ended before ${pattern}: ${stdout}${await stderr}`);
      stdout += decoder.decode(value);
    }
  };
  const match = await readUntil(marker);
  return {
    match,
    readUntil,
    stop: async () => {
      proc.kill("SIGTERM");
      await proc.exited;
      reader.releaseLock();
      return { stdout, stderr: await stderr };
    },
  };
}

describe("serve's log", () => {
  test("a run failed by a denial over HTTP is one line, CODE: message, with no source excerpt or stack", async () => {
    const server = await startUntil(["serve", "--port", "0", "--db", tempDbPath(), "--workflows", GATE], /listening on (\S+)/);
    const url = server.match[1]!;
    const post = (path: string, body: unknown) =>
      fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    expect((await post("/runs", { workflow: "gate", runId: "g1" })).status).toBe(202);
    const statusOf = async () => ((await (await fetch(`${url}/runs/g1`)).json()) as { status: string }).status;
    while ((await statusOf()) !== "waiting-approval") await Bun.sleep(50);
    expect((await post("/runs/g1/deny", { note: "not today" })).status).toBe(200);
    while ((await statusOf()) !== "failed") await Bun.sleep(50);
    const { stderr } = await server.stop();
    expect(stderr.split("\n").filter((line) => line.includes("g1"))).toEqual([
      'smithers serve: run g1: APPROVAL_DENIED: Approval "ship" was denied: not today',
    ]);
    expect(stderr).not.toMatch(STACK_FRAME);
    expect(stderr).not.toMatch(SOURCE_EXCERPT);
  });
});

describe("worker's log", () => {
  test("a run failed by a denial is one line for the task and one for the run, with no stack", async () => {
    const db = tempDbPath();
    expect(smithers(["up", join(GATE, "gate.tsx"), "--detach", "--run-id", "w1", "--db", db]).code).toBe(0);
    const worker = await startUntil(["worker", "--db", db, "--poll-interval", "100ms"], /ran w1 waiting-approval/);
    expect(smithers(["deny", "w1", "--yes", "--note", "not today", "--db", db]).code).toBe(0);
    await worker.readUntil(/resumed w1 failed APPROVAL_DENIED\n/);
    const { stdout, stderr } = await worker.stop();
    expect(stdout.split("\n").filter((line) => line.includes("APPROVAL_DENIED"))).toEqual([
      'w1 fail    ship iter=0 attempt=0 APPROVAL_DENIED: Approval "ship" was denied: not today',
      "resumed w1 failed APPROVAL_DENIED",
    ]);
    for (const text of [stdout, stderr]) {
      expect(text).not.toMatch(STACK_FRAME);
      expect(text).not.toMatch(SOURCE_EXCERPT);
    }
  });
});

describe("logText", () => {
  test("an expected outcome is one line; a worker's note is its text; an internal error or a stranger's keeps its stack", () => {
    expect(logText(new SmithersError("TASK_FAILED", 'Task "b" failed: line one\nline two'))).toBe('TASK_FAILED: Task "b" failed: line one | line two');
    expect(logText(new OutcomeNote("dropped r1: WORKFLOW_LOAD_FAILED: no such file"))).toBe("dropped r1: WORKFLOW_LOAD_FAILED: no such file");
    expect(logText(new SmithersError("ENGINE_ERROR", "a bug"))).toMatch(STACK_FRAME);
    expect(logText(new TypeError("x is undefined"))).toMatch(STACK_FRAME);
  });
});
