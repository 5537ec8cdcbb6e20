/**
 * The CLI forms smithers-orchestrator documents: `up … --resume true`, `--resume <run-id>`,
 * `supervise --interval 30s --stale-threshold 1m`, and exit code 3 for a waiting run.
 */
import { describe, expect, test } from "bun:test";
import { peerResume } from "../../src/cli/index.ts";
import { smithers, smithersAsync } from "../e2e/cli-helpers.ts";
import { sql, tempDbPath } from "../helpers.ts";

describe("smithers up --resume, the peer's forms", () => {
  test("--resume true, --resume false and --resume <run-id> read as --resume, nothing, and --resume --run-id", () => {
    expect(peerResume(["wf.tsx", "--run-id", "r", "--resume", "true"])).toEqual(["wf.tsx", "--run-id", "r", "--resume"]);
    expect(peerResume(["wf.tsx", "--resume", "false"])).toEqual(["wf.tsx"]);
    expect(peerResume(["wf.tsx", "--resume", "r-7"])).toEqual(["wf.tsx", "--resume", "--run-id", "r-7"]);
    expect(peerResume(["--resume", "wf.tsx"])).toEqual(["--resume", "wf.tsx"]); // a workflow file is not a run id
  });

  test("--resume <run-id> with a different --run-id is a usage error (exit 2)", () => {
    const r = smithers(["up", "test/fixtures/approval.tsx", "--db", tempDbPath(), "--resume", "abc", "--run-id", "zzz"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--resume and --run-id name different runs (abc, zzz)");
  });

  test("a waiting run exits 3, and `--resume true` after the approval finishes it", () => {
    const dbPath = tempDbPath();
    const up = ["up", "test/fixtures/approval.tsx", "--db", dbPath, "--run-id", "peer-1"];
    expect(smithers(up).code).toBe(3);
    expect(smithers(["approve", "peer-1", "--yes", "--db", dbPath]).code).toBe(0);
    expect(smithers([...up, "--resume", "true"]).code).toBe(0);
    expect(sql(dbPath, "SELECT status FROM _smithers_runs")).toEqual([{ status: "finished" }]);
  });
});

describe("smithers supervise, the peer's flags", () => {
  test("--stale-threshold takes a duration; a bad one exits 2 with USAGE", () => {
    const dbPath = tempDbPath();
    expect(smithers(["up", "test/fixtures/steps.tsx", "--db", dbPath, "--input", '{"label":"x"}']).code).toBe(0);
    const pass = smithers(["supervise", "--db", dbPath, "--stale-threshold", "1m"]);
    expect([pass.code, pass.stdout]).toEqual([0, "no stale runs, no due waits, no due cron slots\n"]);
    const bad = smithers(["supervise", "--db", dbPath, "--stale-threshold", "soon"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--stale-threshold must be a duration like 30s, 1m or 500ms, got "soon"');
  });

  test("--interval implies --watch: it keeps passing at that interval until stopped", async () => {
    const dbPath = tempDbPath();
    expect(smithers(["up", "test/fixtures/steps.tsx", "--db", dbPath, "--input", '{"label":"x"}']).code).toBe(0);
    const proc = Bun.spawn([process.execPath, "src/cli/index.ts", "supervise", "--db", dbPath, "--interval", "200ms"], { stdout: "pipe", stderr: "pipe" });
    const reader = proc.stdout.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    proc.kill("SIGINT");
    await proc.exited;
    expect(first).toContain(`watching ${dbPath} every 200 ms`);
    expect((await smithersAsync(["supervise", "--db", dbPath, "--interval", "0s"])).code).toBe(2);
  });
});
