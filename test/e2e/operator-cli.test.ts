/** The operator commands (ps, inspect, events, cancel, up --resume without a file, help) run as real processes. */
import { afterEach, describe, expect, test } from "bun:test";
import { sql, tempDbPath } from "../helpers.ts";
import { smithers, smithersAsync, startUntil } from "./cli-helpers.ts";

const engines: { kill: () => void; exited: Promise<number> }[] = [];
afterEach(async () => {
  for (const e of engines.splice(0)) {
    e.kill();
    await e.exited;
  }
});

const steps = (db: string, runId: string, env: Record<string, string> = {}) =>
  smithers(["up", "test/fixtures/steps.tsx", "--input", `{"label":"${runId}"}`, "--db", db, "--run-id", runId], env);

describe("smithers ps", () => {
  test("lists runs newest first with status, progress and a --status filter and --limit", () => {
    const db = tempDbPath();
    expect(steps(db, "ok-1").code).toBe(0);
    expect(steps(db, "bad-1", { STEP_B: "fail" }).code).toBe(1);
    expect(steps(db, "ok-2").code).toBe(0);
    const all = smithers(["ps", "--db", db, "--json"]);
    expect(all.code).toBe(0);
    const list = JSON.parse(all.stdout) as { runId: string; status: string; progress: { done: number; failed: number; total: number }; workflowName: string }[];
    expect(list.map((r) => [r.runId, r.status])).toEqual([
      ["ok-2", "finished"],
      ["bad-1", "failed"],
      ["ok-1", "finished"],
    ]);
    expect(list[0]!.progress).toEqual({ done: 3, failed: 0, total: 3 });
    expect(list[0]!.workflowName).toBe("steps");
    const failed = JSON.parse(smithers(["ps", "--db", db, "--json", "--status", "failed"]).stdout) as { runId: string }[];
    expect(failed.map((r) => r.runId)).toEqual(["bad-1"]);
    expect((JSON.parse(smithers(["ps", "--db", db, "--json", "--limit", "1"]).stdout) as unknown[]).length).toBe(1);
    const text = smithers(["ps", "--db", db]);
    expect(text.stdout.split("\n")[0]).toMatch(/^RUN\s+STATUS\s+WORKFLOW/);
    expect(text.stdout).toContain("bad-1");
    // A failed run's bar is never full: a finished, b failed, of the tasks it recorded.
    const failedRun = list.find((r) => r.runId === "bad-1")!;
    expect(failedRun.progress.done).toBe(1);
    expect(failedRun.progress.failed).toBe(1);
    expect(text.stdout.split("\n").find((line) => line.startsWith("bad-1"))).toContain(`1/${failedRun.progress.total} (1 failed)`);
    expect(text.stdout.split("\n").find((line) => line.startsWith("ok-2"))).toMatch(/ 3\/3 /);
    const bad = smithers(["ps", "--db", db, "--status", "done"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--status must be one of");
  });
});

describe("smithers inspect", () => {
  test("--json shows the input, a pending approval and the waiting node", () => {
    const db = tempDbPath();
    expect(smithers(["up", "test/fixtures/approval.tsx", "--db", db, "--run-id", "gate"]).code).toBe(3);
    const r = smithers(["inspect", "gate", "--db", db, "--json"]);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.status).toBe("waiting-approval");
    expect(report.workflowPath).toEndWith("test/fixtures/approval.tsx");
    expect(report.pendingApprovals).toHaveLength(1);
    expect(report.pendingApprovals[0]).toMatchObject({ nodeId: "ship-it", request: { title: "Deploy app-1.2.3 to production?" } });
    expect(report.waits).toEqual([{ nodeId: "ship-it", iteration: 0, state: "waiting-approval", wakeAtMs: null, wait: null }]);
    expect(report.nodes.find((n: { nodeId: string }) => n.nodeId === "build")).toMatchObject({ state: "finished", attempts: 1 });
  });

  test("--json shows the run's input by field", () => {
    const db = tempDbPath();
    expect(steps(db, "in-1").code).toBe(0);
    const report = JSON.parse(smithers(["inspect", "in-1", "--db", db, "--json"]).stdout);
    expect(report.input).toEqual({ label: "in-1" });
  });

  test("a timer wait is listed with when it fires", () => {
    const db = tempDbPath();
    expect(smithers(["up", "test/fixtures/timer.tsx", "--db", db, "--run-id", "t1"], { TIMER_DURATION: "1h" }).code).toBe(3);
    const report = JSON.parse(smithers(["inspect", "t1", "--db", db, "--json"]).stdout);
    expect(report.waits).toHaveLength(1);
    expect(report.waits[0]).toMatchObject({ nodeId: "cool-down", state: "waiting-timer" });
    expect(report.waits[0].wakeAtMs).toBeGreaterThan(Date.now() + 3_000_000);
  });
});

describe("smithers events", () => {
  test("--json prints one object per line with increasing seqs, filtered by --type, --node and --after-seq", () => {
    const db = tempDbPath();
    expect(steps(db, "ev").code).toBe(0);
    const all = smithers(["events", "ev", "--db", db, "--json"]);
    expect(all.code).toBe(0);
    const lines = all.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => l.seq)).toEqual(lines.map((_, i) => i));
    expect(lines[0]).toMatchObject({ seq: 0, runId: "ev", type: "RunStarted" });
    expect(lines.at(-1).type).toBe("RunFinished");
    const finished = smithers(["events", "ev", "--db", db, "--json", "--type", "NodeFinished"])
      .stdout.trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(finished.map((e) => e.nodeId)).toEqual(["a", "b", "c"]);
    const ofB = smithers(["events", "ev", "--db", db, "--json", "--node", "b"])
      .stdout.trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(new Set(ofB.map((e) => e.type))).toEqual(new Set(["NodeStarted", "NodeFinished"]));
    const after = smithers(["events", "ev", "--db", db, "--json", "--after-seq", "5"])
      .stdout.trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(after[0].seq).toBe(6);
    expect(after.length).toBe(lines.length - 6);
    const text = smithers(["events", "ev", "--db", db]);
    expect(text.stdout).toMatch(/^\s+0 \d{4}-\d\d-\d\dT[^ ]+ RunStarted$/m);
    expect(text.stdout).toContain("finish  b iter=0 attempt=1");
  });

  test("an unknown run or event type exits 2", () => {
    const db = tempDbPath();
    expect(steps(db, "x").code).toBe(0);
    const missing = smithers(["events", "nope", "--db", db]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("RUN_NOT_FOUND");
    expect(smithers(["events", "x", "--db", db, "--type", "NodeDone"]).code).toBe(2);
  });
});

describe("smithers cancel", () => {
  test("stops a run another process executes: its attempt ends cancelled, follow ends with it, each event once", async () => {
    const db = tempDbPath();
    const engine = await startUntil(
      ["up", "test/fixtures/steps.tsx", "--input", '{"label":"c"}', "--db", db, "--run-id", "live"],
      { STEP_B: "hang-polite" },
      "start   b",
    );
    engines.push(engine);
    const follow = smithersAsync(["events", "live", "--db", db, "--json", "--follow"]);
    const cancel = await smithersAsync(["cancel", "live", "--db", db]);
    expect(cancel.code).toBe(0);
    expect(cancel.stdout).toContain("run live cancelled");
    expect(await engine.exited).toBe(130);
    const attempt = sql<{ state: string }>(db, "SELECT state FROM _smithers_attempts WHERE run_id = 'live' AND node_id = 'b'");
    expect(attempt).toEqual([{ state: "cancelled" }]);
    const followed = await follow;
    expect(followed.code).toBe(0);
    const seqs = followed.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l).seq as number);
    const stored = sql<{ seq: number }>(db, "SELECT seq FROM _smithers_events WHERE run_id = 'live' ORDER BY seq").map((r) => r.seq);
    expect(seqs).toEqual(stored);
    expect(JSON.parse(followed.stdout.trim().split("\n").at(-1)!).type).toBe("RunCancelled");
  }, 30_000);

  test("cancels a waiting run at once; an ended run exits 2 RUN_ENDED", () => {
    const db = tempDbPath();
    expect(smithers(["up", "test/fixtures/approval.tsx", "--db", db, "--run-id", "w"]).code).toBe(3);
    const r = smithers(["cancel", "w", "--db", db, "--json"]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ runId: "w", status: "cancelled" });
    const again = smithers(["cancel", "w", "--db", db]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain("RUN_ENDED");
  });
});

describe("smithers up --resume without the file", () => {
  test("loads the workflow the run recorded", () => {
    const db = tempDbPath();
    expect(steps(db, "re", { STEP_C: "fail" }).code).toBe(1);
    const r = smithers(["up", "--resume", "re", "--db", db]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("run re finished");
    expect(smithers(["up", "--resume", "nope", "--db", db]).code).toBe(2);
  });
});

describe("help and mistakes", () => {
  test("an unknown command exits 2 and suggests the closest one", () => {
    const r = smithers(["inspct", "x"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unknown command "inspct"; did you mean inspect?');
  });

  test("an unknown flag exits 2 and suggests one of the command's flags", () => {
    const r = smithers(["ps", "--stauts", "failed"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("did you mean --status?");
  });

  test("every command has --help, exit 0 with its usage", () => {
    for (const command of ["up", "ps", "inspect", "events", "cancel", "supervise", "frames", "approve", "deny", "signal", "human", "cron"]) {
      const r = smithers([command, "--help"]);
      expect(r.code).toBe(0);
      expect(r.stdout).toStartWith(`Usage: smithers ${command}`);
    }
    expect(smithers(["help", "events"]).stdout).toContain("--follow");
  });
});
