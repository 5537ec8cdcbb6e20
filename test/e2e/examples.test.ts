import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { join, resolve } from "node:path";
import { sql, tempDbPath } from "../helpers.ts";

const root = resolve(import.meta.dir, "../..");

function up(example: string, input: unknown, dbPath: string) {
  const proc = Bun.spawnSync(
    [process.execPath, join(root, "src/cli/index.ts"), "up", join(root, "examples", example), "--input", JSON.stringify(input), "--db", dbPath],
    { cwd: root, stdout: "pipe", stderr: "pipe" },
  );
  return { code: proc.exitCode, stdout: proc.stdout.toString(), stderr: proc.stderr.toString() };
}

describe("examples", () => {
  test("gated-deploy.tsx waits for an approval (exit 3), then deploys once approved and resumed", () => {
    const dbPath = tempDbPath();
    const cli = (args: string[]) =>
      Bun.spawnSync([process.execPath, join(root, "src/cli/index.ts"), ...args, "--db", dbPath], { cwd: root, stdout: "pipe", stderr: "pipe" }).exitCode;
    const file = join(root, "examples", "gated-deploy.tsx");
    expect(cli(["up", file, "--run-id", "d1", "--input", '{"version":"1.2.3"}'])).toBe(3);
    expect(cli(["approve", "d1", "--by", "ada", "--yes"])).toBe(0);
    expect(cli(["up", file, "--run-id", "d1", "--resume"])).toBe(0);
    expect(sql(dbPath, "SELECT url, approved_by FROM deploy")).toEqual([{ url: "https://prod.example.com", approved_by: "ada" }]);
  });

  test("signal-deploy.tsx waits for its signal, then for a person, each woken by the daemon", () => {
    const dbPath = tempDbPath();
    const cli = (args: string[]) =>
      Bun.spawnSync([process.execPath, join(root, "src/cli/index.ts"), ...args, "--db", dbPath], { cwd: root, stdout: "pipe", stderr: "pipe" }).exitCode;
    const file = join(root, "examples", "signal-deploy.tsx");
    expect(cli(["up", file, "--run-id", "rel-7", "--input", '{"deployId":"d-7"}'])).toBe(3);
    expect(cli(["signal", "rel-7", "deploy.completed", "--correlation-id", "d-7", "--data", '{"status":"ok","url":"https://prod.example.com"}'])).toBe(0);
    expect(cli(["supervise"])).toBe(0);
    expect(sql(dbPath, "SELECT status FROM _smithers_runs")).toEqual([{ status: "waiting-approval" }]);
    expect(cli(["human", "answer", "rel-7:smoke-test:0:1", "--data", '{"passed":true,"notes":"login works"}'])).toBe(0);
    expect(cli(["supervise"])).toBe(0);
    expect(sql(dbPath, "SELECT summary FROM report")).toEqual([{ summary: "d-7 ok at https://prod.example.com; smoke test passed: login works" }]);
  });

  test("hello.tsx greets with the input name", () => {
    const dbPath = tempDbPath();
    expect(up("hello.tsx", { name: "Ada" }, dbPath).code).toBe(0);
    expect(sql(dbPath, "SELECT node_id, message FROM greeting")).toEqual([{ node_id: "greet", message: "Hello, Ada!" }]);
  });

  test("review-loop.tsx loops until the reviewer approves on the third pass", () => {
    const dbPath = tempDbPath();
    const r = up("review-loop.tsx", { topic: "durable workflows" }, dbPath);
    expect(r.code).toBe(0);
    expect(sql(dbPath, "SELECT iteration, approved FROM review ORDER BY iteration")).toEqual([
      { iteration: 0, approved: 0 },
      { iteration: 1, approved: 0 },
      { iteration: 2, approved: 1 },
    ]);
    expect(sql(dbPath, "SELECT iteration, revision FROM draft ORDER BY iteration")).toEqual([
      { iteration: 0, revision: 0 },
      { iteration: 1, revision: 1 },
      { iteration: 2, revision: 2 },
    ]);
    expect(sql(dbPath, "SELECT ralph_id, iteration, done FROM _smithers_ralph")).toEqual([{ ralph_id: "revise", iteration: 2, done: 1 }]);
  });

  test("fan-out.tsx scans every repository, then combines the counts", () => {
    const dbPath = tempDbPath();
    const r = up("fan-out.tsx", { repos: ["api", "web", "cli"] }, dbPath);
    expect(r.code).toBe(0);
    const scans = sql<{ repo: string; open_issues: number }>(dbPath, "SELECT repo, open_issues FROM scan ORDER BY repo");
    expect(scans.map((s) => s.repo)).toEqual(["api", "cli", "web"]);
    const total = scans.reduce((n, s) => n + s.open_issues, 0);
    const busiest = scans.reduce((a, b) => (b.open_issues > a.open_issues ? b : a)).repo;
    expect(sql(dbPath, "SELECT total, busiest FROM summary")).toEqual([{ total, busiest }]);
  });

  test("cron-report.tsx: scheduled with `smithers cron add`, a due slot is started once by `smithers supervise`", async () => {
    const dbPath = tempDbPath();
    const cli = (args: string[]) => Bun.spawnSync([process.execPath, join(root, "src/cli/index.ts"), ...args, "--db", dbPath], { cwd: root, stdout: "pipe" });
    const added = cli(["cron", "add", join(root, "examples/cron-report.tsx"), "--schedule", "*/5 * * * *", "--input", '{"queue":"support"}']);
    expect(added.exitCode).toBe(0);
    // Pretend the daemon was down over the first slot: make it due now.
    const db = new Database(dbPath);
    db.run("UPDATE _smithers_cron SET next_run_at_ms = ?", [Date.now() - 1_000]);
    db.close();
    const passes = [cli(["supervise"]), cli(["supervise"])].map((p) => p.stdout.toString());
    expect(passes[0]).toMatch(/^cron cron-report started cron:cron-report:\d+ finished$/m);
    expect(passes[1]).toBe("no stale runs, no due waits, no due cron slots\n");
    expect(sql(dbPath, "SELECT queue, open FROM report")).toEqual([{ queue: "support", open: 3 }]);
  });
});
