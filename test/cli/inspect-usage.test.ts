/** `up --max-cost-usd` / `--max-tokens`, the usage line, and `inspect` (text and --json), as real processes. */
import { describe, expect, test } from "bun:test";
import { smithers } from "../e2e/cli-helpers.ts";
import { sql, tempDbPath } from "../helpers.ts";

const fixture = "test/fixtures/agent-usage.tsx";

describe("agent usage on the command line", () => {
  test("up prints the agents' output and the run's usage; inspect --json reports it per run and per task", () => {
    const db = tempDbPath();
    const up = smithers(["up", fixture, "--run-id", "u1", "--db", db]);
    expect(up.code).toBe(0);
    expect(up.stdout).toContain("agent   first: Writing the note.");
    expect(up.stdout).toContain("usage 200 input tokens (60 cached), 40 output tokens, $0.0200");

    const inspect = smithers(["inspect", "u1", "--json", "--db", db]);
    expect(inspect.code).toBe(0);
    const report = JSON.parse(inspect.stdout);
    expect(report).toMatchObject({ runId: "u1", status: "finished", workflowName: "agent-usage", budget: null });
    expect(report.usage).toEqual({ inputTokens: 200, cachedInputTokens: 60, outputTokens: 40, costUsd: 0.02 });
    expect(report.nodes.map((n: { nodeId: string; state: string; attempts: number; usage: unknown }) => [n.nodeId, n.state, n.attempts, n.usage])).toEqual([
      ["first", "finished", 1, { inputTokens: 100, cachedInputTokens: 30, outputTokens: 20, costUsd: 0.01 }],
      ["second", "finished", 1, { inputTokens: 100, cachedInputTokens: 30, outputTokens: 20, costUsd: 0.01 }],
    ]);
    const text = smithers(["inspect", "u1", "--db", db]);
    expect(text.stdout).toContain("run u1: finished");
    expect(text.stdout).toContain("first iter=0 finished, 1 attempt(s)");
  });

  test("--max-cost-usd stops the run with BUDGET_EXCEEDED (exit 1); --resume with a higher limit finishes it", () => {
    const db = tempDbPath();
    const stopped = smithers(["up", fixture, "--run-id", "b1", "--db", db, "--max-cost-usd", "0.01"]);
    expect(stopped.code).toBe(1);
    expect(stopped.stderr).toContain("BUDGET_EXCEEDED");
    const inspect = JSON.parse(smithers(["inspect", "b1", "--json", "--db", db]).stdout);
    expect(inspect.status).toBe("failed");
    expect(inspect.error.code).toBe("BUDGET_EXCEEDED");
    expect(inspect.budget).toEqual({ maxCostUsd: 0.01 });
    expect(inspect.nodes.map((n: { nodeId: string }) => n.nodeId)).toEqual(["first"]);

    const resumed = smithers(["up", fixture, "--run-id", "b1", "--resume", "--db", db, "--max-cost-usd", "1"]);
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toContain("run b1 finished");
  });

  test("--pricing prices an agent that reports tokens only; without it a cost limit refuses to go on (BUDGET_UNPRICED)", () => {
    const db = tempDbPath();
    const unpriced = smithers(["up", fixture, "--run-id", "p1", "--db", db, "--max-cost-usd", "1"], { NO_COST: "1" });
    expect(unpriced.code).toBe(1);
    expect(unpriced.stderr).toContain("BUDGET_UNPRICED");
    const pricing = JSON.stringify({ "metered-1": { inputPerMTok: 100, cachedInputPerMTok: 10, outputPerMTok: 1000 } });
    const priced = smithers(["up", fixture, "--run-id", "p1", "--resume", "--db", db, "--max-cost-usd", "1", "--pricing", pricing], { NO_COST: "1" });
    expect(priced.code).toBe(0);
    // Per call: 70 * 100e-6 + 30 * 10e-6 + 20 * 1000e-6 = $0.0273: the first call's stored row is
    // priced on resume (and stored so), the second as it runs.
    expect(priced.stdout).toContain("usage 200 input tokens (60 cached), 40 output tokens, $0.0546");
    expect(sql(db, "SELECT node_id, round(cost_usd, 6) AS cost FROM _smithers_attempts ORDER BY node_id")).toEqual([
      { node_id: "first", cost: 0.0273 },
      { node_id: "second", cost: 0.0273 },
    ]);
    expect(smithers(["up", fixture, "--db", db, "--pricing", '{"m": {"inputPerMTok": -1, "outputPerMTok": 1}}']).code).toBe(2);
  });

  test("bad limits and unknown runs exit 2", () => {
    const db = tempDbPath();
    expect(smithers(["up", fixture, "--db", db, "--max-tokens", "1.5"]).code).toBe(2);
    expect(smithers(["up", fixture, "--db", db, "--max-cost-usd", "-1"]).code).toBe(2);
    smithers(["up", fixture, "--run-id", "x", "--db", db]);
    const missing = smithers(["inspect", "nope", "--db", db]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("RUN_NOT_FOUND");
  });
});
