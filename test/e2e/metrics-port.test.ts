/** `worker --metrics-port` and `supervise --watch --metrics-port`: the metrics of the runs that process executes, on loopback. */
import { afterAll, expect, test } from "bun:test";
import { join } from "node:path";
import { tempDir } from "../helpers.ts";
import { sample } from "../support/prom-text.ts";
import { cli, root, smithers } from "./cli-helpers.ts";

const METERED = join(root, "test/fixtures/metrics/metered.tsx");
const procs: Bun.Subprocess[] = [];
afterAll(async () => {
  for (const p of procs.splice(0)) {
    p.kill("SIGKILL");
    await p.exited;
  }
});

/** Starts `smithers args…` and resolves with the process and the metrics URL it printed. */
async function startWithMetrics(args: string[]): Promise<{ proc: Bun.Subprocess<"ignore", "pipe", "pipe">; url: string }> {
  const proc = Bun.spawn([process.execPath, cli, ...args], { cwd: root, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  procs.push(proc);
  const decoder = new TextDecoder();
  let seen = "";
  for await (const chunk of proc.stdout) {
    seen += decoder.decode(chunk);
    const m = /metrics on (http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(seen);
    if (m) return { proc, url: m[1]! };
  }
  throw new Error(`no metrics URL printed: ${seen} ${await new Response(proc.stderr).text()}`);
}

async function scrapeUntil(url: string, done: (body: string) => boolean): Promise<string> {
  let body = "";
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    body = await (await fetch(url)).text();
    if (done(body)) return body;
    await Bun.sleep(50);
  }
  throw new Error(`metrics never showed what was expected:\n${body}`);
}

test("a worker serves the metrics of the runs it executes on its loopback --metrics-port; other paths are 404", async () => {
  const db = join(tempDir(), "smithers.db");
  const queued = smithers(["up", METERED, "--detach", "--run-id", "w-1", "--db", db]);
  expect(queued.code).toBe(0);
  const { proc, url } = await startWithMetrics(["worker", "--db", db, "--metrics-port", "0", "--quiet"]);
  const body = await scrapeUntil(url, (b) => sample(b, "smithers_runs_ended_total", { status: "finished" }) === 1);
  expect(sample(body, "smithers_task_attempts_total", { workflow: "metered", outcome: "finished" })).toBe(2);
  expect(sample(body, "smithers_task_attempts_total", { workflow: "metered", outcome: "failed" })).toBe(1);
  expect(sample(body, "smithers_retries_total")).toBe(1);
  expect(sample(body, "smithers_agent_tokens_total", { model: "metered-1", type: "output" })).toBe(20);
  expect(sample(body, "smithers_runs", { status: "running" })).toBe(0);
  expect(sample(body, "smithers_queue_depth")).toBe(0);
  expect((await fetch(url.replace("/metrics", "/runs"))).status).toBe(404);
  proc.kill("SIGINT");
  expect(await proc.exited).toBe(0);
});

test("supervise --metrics-port without --watch is a usage error (exit 2); a bad port too", () => {
  const db = join(tempDir(), "smithers.db");
  expect(smithers(["up", METERED, "--detach", "--run-id", "s-1", "--db", db]).code).toBe(0);
  const once = smithers(["supervise", "--db", db, "--metrics-port", "0"]);
  expect(once.code).toBe(2);
  expect(once.stderr).toContain("--metrics-port serves metrics while supervise watches");
  const bad = smithers(["worker", "--db", db, "--metrics-port", "70000"]);
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain("--metrics-port must be a port number");
});

test("supervise --watch --metrics-port serves the gauges read from the database", async () => {
  const db = join(tempDir(), "smithers.db");
  for (const id of ["g-1", "g-2"]) expect(smithers(["up", METERED, "--detach", "--run-id", id, "--db", db]).code).toBe(0);
  const { proc, url } = await startWithMetrics(["supervise", "--db", db, "--watch", "--metrics-port", "0"]);
  const body = await scrapeUntil(url, (b) => sample(b, "smithers_queue_depth") !== undefined);
  expect(sample(body, "smithers_queue_depth")).toBe(2);
  expect(sample(body, "smithers_runs", { status: "queued" })).toBe(2);
  expect(sample(body, "smithers_runs", { status: "running" })).toBe(0);
  proc.kill("SIGINT");
  expect(await proc.exited).toBe(0);
});
