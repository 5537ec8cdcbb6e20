/**
 * Operating a PostgreSQL deployment from the CLI: `up --detach` queues a run that a `smithers
 * worker` process runs, `events --follow` follows it to its end, a cron schedule is fired by the
 * worker, `prune` trims ended runs, and `serve --max-concurrent 0` hands HTTP runs to the worker.
 */
import { afterEach, describe, expect, test } from "bun:test";
import type { Subprocess } from "bun";
import { join } from "node:path";
import { FIXTURES, post, waitForStatus } from "../server/helpers.ts";
import { connectPg, pgTestServer } from "../support/postgres.ts";
import { cli, root, smithers, smithersAsync } from "./cli-helpers.ts";

const pg = await pgTestServer();
const started: Subprocess[] = [];
afterEach(async () => {
  for (const p of started.splice(0)) {
    p.kill("SIGTERM");
    await p.exited;
  }
});

function startWorker(url: string, ...flags: string[]): Subprocess {
  const proc = Bun.spawn([process.execPath, cli, "worker", "--db", url, "--poll-interval", "200ms", ...flags], {
    cwd: root,
    stdout: "pipe",
    stderr: "pipe",
  });
  started.push(proc);
  return proc;
}

async function until<T>(check: () => Promise<T | undefined | false>, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await Bun.sleep(50);
  }
}

describe.skipIf(!pg)("operating PostgreSQL from the CLI", () => {
  test("up --detach queues a run; a worker runs it; events --follow prints it to its end; prune trims it", async () => {
    const url = await pg!.createDatabase();
    const detached = smithers(["up", "test/fixtures/steps.tsx", "--detach", "--input", '{"label":"d"}', "--run-id", "det", "--db", url]);
    expect(detached.stderr).toBe("");
    expect(detached.code).toBe(0);
    expect(detached.stdout).toContain("run det queued");
    // Flags that only the executing process could honour are refused, and a bad input never queues.
    const refused = smithers(["up", "test/fixtures/steps.tsx", "--detach", "--max-concurrency", "2", "--input", '{"label":"x"}', "--db", url]);
    expect([refused.code, refused.stderr]).toEqual([2, expect.stringContaining("--max-concurrency cannot be used with --detach")]);
    expect(smithers(["up", "test/fixtures/steps.tsx", "--detach", "--input", '{"label":1}', "--db", url]).code).toBe(2);
    const follow = smithersAsync(["events", "det", "--follow", "--db", url]);
    startWorker(url);
    const followed = await follow;
    expect(followed.code).toBe(0);
    expect(followed.stdout).toContain("RunFinished");
    const sql = connectPg(url);
    try {
      expect((await sql`SELECT run_id, status FROM _smithers_runs`).map((r) => [r.run_id, r.status])).toEqual([["det", "finished"]]);
      expect(Number((await sql`SELECT count(*) AS n FROM _smithers_queue`)[0]!.n)).toBe(0);
      const events = Number((await sql`SELECT count(*) AS n FROM _smithers_events WHERE run_id = 'det'`)[0]!.n);
      const prune = JSON.parse(smithers(["prune", "--older-than", "0s", "--json", "--db", url]).stdout) as { runs: { runId: string }[] };
      expect(prune.runs.map((r) => r.runId)).toEqual(["det"]);
      const left = Number((await sql`SELECT count(*) AS n FROM _smithers_events WHERE run_id = 'det'`)[0]!.n);
      expect(left).toBeLessThan(events);
      expect(Number((await sql`SELECT count(*) AS n FROM step WHERE run_id = 'det'`)[0]!.n)).toBe(3); // output rows stay
    } finally {
      await sql.end();
    }
  }, 30_000);

  test("a human answer and a signal from the CLI wake a run a worker started; it finishes", async () => {
    const url = await pg!.createDatabase();
    expect(smithers(["up", "test/fixtures/waits.tsx", "--detach", "--run-id", "w1", "--db", url]).code).toBe(0);
    startWorker(url);
    const sql = connectPg(url);
    try {
      const status = async () => (await sql`SELECT status FROM _smithers_runs WHERE run_id = 'w1'`)[0]?.status as string | undefined;
      await until(async () => (await status()) === "waiting-approval" || (await status()) === "waiting-event");
      const inbox = JSON.parse(smithers(["human", "list", "--json", "--db", url]).stdout) as { requestId: string }[];
      expect(inbox.map((r) => r.requestId)).toEqual(["w1:review:0:1"]);
      expect(smithers(["human", "answer", "w1:review:0:1", "--data", '{"approved":true,"comments":"ok"}', "--db", url]).code).toBe(0);
      await until(async () => (await status()) === "waiting-event");
      expect(smithers(["signal", "w1", "feedback", "--data", '{"rating":9,"comment":"x"}', "--db", url]).code).toBe(2); // checked against its schema
      expect(smithers(["signal", "w1", "feedback", "--data", '{"rating":5,"comment":"great"}', "--db", url]).code).toBe(0);
      await until(async () => (await status()) === "finished");
      expect((await sql`SELECT text FROM thanks WHERE run_id = 'w1'`).map((r) => r.text)).toEqual(["thanks for the 5: great"]);
    } finally {
      await sql.end();
    }
  }, 30_000);

  test("a worker fires due cron slots: their runs, named after the slot, finish", async () => {
    const url = await pg!.createDatabase();
    const add = smithers(["cron", "add", "test/fixtures/steps.tsx", "--schedule", "* * * * * *", "--input", '{"label":"tick"}', "--id", "tick", "--db", url]);
    expect(add.code).toBe(0);
    startWorker(url);
    const sql = connectPg(url);
    try {
      const run = await until(async () => (await sql`SELECT run_id, status FROM _smithers_runs WHERE status = 'finished' LIMIT 1`)[0]);
      expect(String(run.run_id)).toMatch(/^cron:tick:\d+$/);
      expect(smithers(["cron", "rm", "tick", "--db", url]).code).toBe(0);
    } finally {
      await sql.end();
    }
  }, 30_000);

  test("serve --max-concurrent 0 accepts runs over HTTP and a worker with the same workflows runs them", async () => {
    const url = await pg!.createDatabase();
    const server = Bun.spawn([process.execPath, cli, "serve", "--port", "0", "--db", url, "--workflows", FIXTURES, "--max-concurrent", "0"], {
      cwd: root,
      stdout: "pipe",
      stderr: "pipe",
    });
    started.push(server);
    const reader = (server.stdout as ReadableStream).pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    while (!/http:\/\/\S+/.test(text)) text += (await reader.read()).value ?? "";
    reader.releaseLock();
    const api = text.match(/http:\/\/\S+/)![0];
    const accepted = await post(`${api}/runs`, { workflow: "steps", input: { delayMs: 1 }, runId: "http-1" });
    expect(accepted.status).toBe(202);
    await Bun.sleep(300);
    expect(((await (await fetch(`${api}/runs/http-1`)).json()) as { status: string }).status).toBe("queued"); // the server runs nothing itself
    startWorker(url, "--workflows", join(FIXTURES));
    expect(await waitForStatus(api, "http-1", ["finished", "failed"], 15_000)).toBe("finished");
  }, 30_000);
});
