/** @jsxImportSource smithers-workflows */
/** `--limit`, `smithers limits`, and the slots `ps` and `inspect` show, as real processes. */
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { z } from "zod";
import { createSmithers, runWorkflow } from "../../src/index.ts";
import { smithers } from "../e2e/cli-helpers.ts";
import { sql, tempDbPath } from "../helpers.ts";

const keyed = "test/fixtures/keyed.tsx";
const env = () => ({ KEYED_EXEC_FILE: join(resolve(tempDbPath(), ".."), "exec.log"), KEYED_PAUSE_MS: "1" });

describe("--limit and smithers limits", () => {
  test("up --limit overrides the workflow's concurrency; smithers limits lists the key with what was declared and its use", () => {
    const db = tempDbPath();
    const up = smithers(["up", keyed, "--run-id", "l1", "--db", db, "--limit", "shared=1", "--limit", "shared.perMinute=30"], env());
    expect(up.code).toBe(0);
    expect(sql(db, "SELECT limit_key, concurrency, per_minute, tokens_per_minute FROM _smithers_limits")).toEqual([
      { limit_key: "shared", concurrency: 1, per_minute: 30, tokens_per_minute: null },
    ]);
    const json = smithers(["limits", "--json", "--db", db]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual([
      {
        key: "shared",
        concurrency: 1,
        perMinute: 30,
        tokensPerMinute: null,
        held: 0,
        waiting: 0,
        requestsLastMinute: 1,
        tokensLastMinute: 0,
        blockedUntilMs: null,
      },
    ]);
    const text = smithers(["limits", "--db", db]);
    expect(text.stdout.split("\n")[0]).toMatch(/^KEY\s+SLOTS\s+WAITING\s+STARTS\/MIN\s+TOKENS\/MIN\s+HELD BY 429$/);
    expect(text.stdout).toMatch(/shared\s+0\/1\s+0\s+1\/30\s+-\s+-/);
  });

  test("a malformed --limit, a limit of 0, or --limit with --detach is refused before anything runs (exit 2)", () => {
    const db = tempDbPath();
    for (const flag of ["shared", "shared=0", "shared=-1", "shared=1.5", "shared.burst=3", "=2"]) {
      const run = smithers(["up", keyed, "--db", db, "--limit", flag], env());
      expect([flag, run.code]).toEqual([flag, 2]);
      expect(run.stderr).toContain("INVALID_LIMIT");
    }
    const detached = smithers(["up", keyed, "--db", db, "--detach", "--limit", "shared=1"], env());
    expect(detached.code).toBe(2);
    expect(detached.stderr).toContain("--limit cannot be used with --detach");
    const worker = smithers(["worker", "--db", db, "--limit", "shared=zero"]);
    expect(worker.code).toBe(2);
    expect(worker.stderr).toContain("INVALID_LIMIT");
    const serve = smithers(["serve", "--db", db, "--port", "0", "--limit", "shared.perMinute=0"]);
    expect(serve.code).toBe(2);
    expect(serve.stderr).toContain("INVALID_LIMIT");
    const acceptOnly = smithers(["serve", "--db", db, "--port", "0", "--max-concurrent", "0", "--limit", "shared=1"]);
    expect(acceptOnly.code).toBe(2);
    expect(acceptOnly.stderr).toContain("--limit sets the limits of the server's own worker");
    expect(existsSync(db)).toBe(false); // refused before the database was even opened
  });

  test("ps and inspect show the slots a key has held and waited for while one run holds it and another waits", async () => {
    const db = tempDbPath();
    let release!: () => void;
    const gate = new Promise<void>((done) => (release = done));
    const {
      Workflow,
      Task,
      smithers: workflow,
      outputs,
    } = createSmithers({ out: z.object({ v: z.number() }) }, { dbPath: db, limits: { shared: { concurrency: 1 } } });
    const wf = workflow(() => (
      <Workflow name="holder">
        <Task id="hold" output={outputs.out} concurrencyKey="shared">
          {async () => {
            await gate;
            return { v: 1 };
          }}
        </Task>
      </Workflow>
    ));
    const holder = runWorkflow(wf, { runId: "holder", input: {} });
    while (sql<{ n: number }>(db, "SELECT count(*) AS n FROM _smithers_slots WHERE state = 'held'")[0]!.n === 0) await Bun.sleep(5);
    const waiter = await runWorkflow(wf, { runId: "waiter", input: {} });
    expect(waiter.status).toBe("waiting-slot");
    const ps = smithers(["ps", "--db", db]);
    expect(ps.stdout).toContain("slots shared: 1/1 held, 1 waiting");
    const inspect = smithers(["inspect", "waiter", "--db", db]);
    expect(inspect.stdout).toContain('hold iter=0 waiting-slot for key "shared"');
    expect(inspect.stdout).toContain("shared: 0 held, 1 waiting");
    expect(JSON.parse(smithers(["inspect", "holder", "--json", "--db", db]).stdout).slots).toEqual([{ key: "shared", held: 1, waiting: 0 }]);
    // Another process's run of the key waits too: up says so and exits 3.
    const up = smithers(["up", keyed, "--run-id", "third", "--db", db, "--limit", "shared=1"], env());
    expect(up.code).toBe(3);
    expect(up.stdout).toContain("run third waiting-slot");
    expect(up.stdout).toContain("the run waits for a concurrency slot");
    release();
    expect((await holder).status).toBe("finished");
    // The holder's release made the waiter due.
    expect(sql<{ wake_at_ms: number | null }>(db, "SELECT wake_at_ms FROM _smithers_runs WHERE run_id = 'waiter'")[0]!.wake_at_ms).not.toBeNull();
  });
});
