/** `smithers worker` and `up --detach` on the embedded SQLite database: the same hand-over as on PostgreSQL, polled. */
import { expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql, tempDbPath } from "../helpers.ts";
import { cli, root, smithers } from "./cli-helpers.ts";

test("up --detach queues a run on SQLite; a worker runs it and stops with exit 0 on SIGTERM", async () => {
  const db = tempDbPath();
  const detached = smithers(["up", "test/fixtures/steps.tsx", "--detach", "--input", '{"label":"s"}', "--run-id", "sq", "--db", db]);
  expect(detached.code).toBe(0);
  expect(sql(db, "SELECT run_id, workflow_name FROM _smithers_queue")).toEqual([{ run_id: "sq", workflow_name: "steps" }]);
  const worker = Bun.spawn([process.execPath, cli, "worker", "--db", db, "--poll-interval", "100ms"], { cwd: root, stdout: "pipe", stderr: "pipe" });
  const deadline = Date.now() + 15_000;
  while (sql<{ status: string }>(db, "SELECT status FROM _smithers_runs WHERE run_id = 'sq'")[0]?.status !== "finished") {
    if (Date.now() > deadline) throw new Error("the worker did not finish the run");
    await Bun.sleep(50);
  }
  worker.kill("SIGTERM");
  expect(await worker.exited).toBe(0);
  const out = await new Response(worker.stdout).text();
  expect(out).toContain("ran sq finished");
  expect(sql(db, "SELECT count(*) AS n FROM _smithers_queue")).toEqual([{ n: 0 }]);
});

test("worker refuses bad flags with exit 2", () => {
  const db = tempDbPath();
  expect(smithers(["up", "test/fixtures/steps.tsx", "--input", '{"label":"s"}', "--db", db]).code).toBe(0);
  for (const flags of [
    ["--concurrency", "0"],
    ["--lease", "5ms"],
    ["--lease", "soon"],
    ["--poll-interval", "0"],
    ["--workflows", mkdtempSync(join(tmpdir(), "empty-"))],
  ]) {
    const r = smithers(["worker", "--db", db, ...flags]);
    expect([flags.join(" "), r.code]).toEqual([flags.join(" "), 2]);
    expect(r.stderr).toContain("USAGE");
  }
  expect(smithers(["worker", "--db", join(tmpdir(), "no-such-dir", "x.db")]).code).toBe(2);
  const lease = smithers(["serve", "--db", db, "--max-concurrent", "0", "--lease", "5s"]);
  expect([lease.code, lease.stderr.includes("--max-concurrent 0 runs none")]).toEqual([2, true]);
});

test("ps lists runs queued for workers first; cancel drops a queued run before any worker starts it", () => {
  const db = tempDbPath();
  expect(smithers(["up", "test/fixtures/steps.tsx", "--input", '{"label":"a"}', "--run-id", "done", "--db", db]).code).toBe(0);
  expect(smithers(["up", "test/fixtures/steps.tsx", "--detach", "--input", '{"label":"q"}', "--run-id", "later", "--db", db]).code).toBe(0);
  const list = JSON.parse(smithers(["ps", "--json", "--db", db]).stdout) as { runId: string; status: string }[];
  expect(list.map((r) => [r.runId, r.status])).toEqual([
    ["later", "queued"],
    ["done", "finished"],
  ]);
  expect((JSON.parse(smithers(["ps", "--status", "queued", "--json", "--db", db]).stdout) as { runId: string }[]).map((r) => r.runId)).toEqual(["later"]);
  const cancelled = smithers(["cancel", "later", "--db", db]);
  expect([cancelled.code, cancelled.stdout.trim()]).toEqual([0, "run later cancelled"]);
  expect(sql(db, "SELECT count(*) AS n FROM _smithers_queue")).toEqual([{ n: 0 }]);
  expect(smithers(["ps", "--status", "queued", "--db", db]).stdout.trim()).toBe("no queued runs");
  expect(smithers(["cancel", "later", "--db", db]).code).toBe(2); // nothing left to cancel: RUN_NOT_FOUND
});
