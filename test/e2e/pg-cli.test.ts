/** The `smithers` command against PostgreSQL: --db takes a URL (or SMITHERS_DATABASE_URL), and up, ps, inspect, approve and resume work on it. */
import { describe, expect, test } from "bun:test";
import { connectPg, pgTestServer } from "../support/postgres.ts";
import { smithers } from "./cli-helpers.ts";

const pg = await pgTestServer();

describe.skipIf(!pg)("smithers on PostgreSQL", () => {
  test("up runs a workflow into a postgres:// database; ps and inspect read it back", async () => {
    const url = await pg!.createDatabase();
    const up = smithers(["up", "test/fixtures/steps.tsx", "--input", '{"label":"x"}', "--db", url, "--run-id", "pg-1"]);
    expect(up.stderr).toBe("");
    expect(up.code).toBe(0);
    const ps = JSON.parse(smithers(["ps", "--db", url, "--json"]).stdout) as { runId: string; status: string; progress: { done: number; total: number } }[];
    expect(ps.map((r) => [r.runId, r.status, r.progress.done])).toEqual([["pg-1", "finished", 3]]);
    const inspect = JSON.parse(smithers(["inspect", "pg-1", "--db", url, "--json"]).stdout);
    expect(inspect.status).toBe("finished");
    const sql = connectPg(url);
    try {
      const runs = await sql`SELECT run_id, status FROM _smithers_runs`;
      expect(runs.map((r) => [r.run_id, r.status])).toEqual([["pg-1", "finished"]]);
    } finally {
      await sql.end();
    }
  });

  test("SMITHERS_DATABASE_URL stands in for --db: a run waits for approval, is approved and resumed to the end", async () => {
    const url = await pg!.createDatabase();
    const env = { SMITHERS_DATABASE_URL: url };
    expect(smithers(["up", "test/fixtures/approval.tsx", "--run-id", "gate"], env).code).toBe(3);
    expect(smithers(["approve", "gate", "--node", "ship-it", "--yes"], env).code).toBe(0);
    const resumed = smithers(["up", "--resume", "gate"], env);
    expect(resumed.stderr).toBe("");
    expect(resumed.code).toBe(0);
    expect(JSON.parse(smithers(["inspect", "gate", "--json"], env).stdout).status).toBe("finished");
  });

  test("a supervise pass on a postgres:// URL with a password resumes an approved run", async () => {
    const base = new URL(await pg!.createDatabase());
    base.password = "unused-with-trust-auth";
    const url = base.toString();
    expect(smithers(["up", "test/fixtures/approval.tsx", "--db", url, "--run-id", "gate"]).code).toBe(3);
    expect(smithers(["approve", "gate", "--node", "ship-it", "--yes", "--db", url]).code).toBe(0);
    const pass = smithers(["supervise", "--db", url]);
    expect(pass.stderr).toBe("");
    expect(pass.code).toBe(0);
    expect(pass.stdout).not.toContain("unused-with-trust-auth");
    expect(JSON.parse(smithers(["inspect", "gate", "--db", url, "--json"]).stdout).status).toBe("finished");
  });
});
