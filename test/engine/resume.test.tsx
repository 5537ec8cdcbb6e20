/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { hostname } from "node:os";
import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { createSmithers, runWorkflow, SmithersError } from "../../src/index.ts";
import { execute, query, tempDbPath, waitFor } from "../helpers.ts";

function twoStep(dbPath: string, behaviour: { failB: boolean; calls: Record<string, number> }) {
  const { Workflow, Task, smithers, outputs } = createSmithers({ input: z.object({ topic: z.string() }), out: z.object({ n: z.number() }) }, { dbPath });
  return smithers(() => (
    <Workflow name="two-step">
      <Task id="a" output={outputs.out}>
        {() => {
          behaviour.calls.a = (behaviour.calls.a ?? 0) + 1;
          return { n: 1 };
        }}
      </Task>
      <Task id="b" output={outputs.out} noRetry>
        {() => {
          behaviour.calls.b = (behaviour.calls.b ?? 0) + 1;
          if (behaviour.failB) throw new Error("b is broken");
          return { n: 2 };
        }}
      </Task>
    </Workflow>
  ));
}

describe("runWorkflow resume", () => {
  test("resuming a failed run re-runs only the failed task, keeping the earlier attempt as history", async () => {
    const dbPath = tempDbPath();
    const behaviour = { failB: true, calls: {} as Record<string, number> };
    const wf = twoStep(dbPath, behaviour);
    const first = await runWorkflow(wf, { input: { topic: "x" } });
    expect(first.status).toBe("failed");
    behaviour.failB = false; // the user fixed the cause
    const second = await runWorkflow(wf, { input: { topic: "x" }, runId: first.runId, resume: true });
    expect(second.status).toBe("finished");
    expect(behaviour.calls).toEqual({ a: 1, b: 2 });
    expect(await query(dbPath, "SELECT node_id, attempt, state FROM _smithers_attempts ORDER BY node_id, attempt")).toEqual([
      { node_id: "a", attempt: 1, state: "finished" },
      { node_id: "b", attempt: 1, state: "failed" },
      { node_id: "b", attempt: 2, state: "finished" },
    ]);
    expect(await query(dbPath, "SELECT node_id, n FROM out ORDER BY node_id")).toEqual([
      { node_id: "a", n: 1 },
      { node_id: "b", n: 2 },
    ]);
  });

  test("resuming a finished run runs nothing and returns its output", async () => {
    const dbPath = tempDbPath();
    const behaviour = { failB: false, calls: {} as Record<string, number> };
    const wf = twoStep(dbPath, behaviour);
    const first = await runWorkflow(wf, { input: { topic: "x" } });
    const before = await query(dbPath, "SELECT status, finished_at_ms, runtime_owner_id FROM _smithers_runs");
    const events = (await query(dbPath, "SELECT COUNT(*) AS n FROM _smithers_events"))[0];
    const again = await runWorkflow(wf, { runId: first.runId, resume: true });
    expect(again).toMatchObject({ status: "finished", output: { n: 2 } });
    expect(behaviour.calls).toEqual({ a: 1, b: 1 });
    // Nothing about the run changed: no new events, same finish time and owner.
    expect(await query(dbPath, "SELECT status, finished_at_ms, runtime_owner_id FROM _smithers_runs")).toEqual(before);
    expect((await query(dbPath, "SELECT COUNT(*) AS n FROM _smithers_events"))[0]).toEqual(events);
  });

  test("resuming with a different input rejects with INPUT_MISMATCH and changes nothing", async () => {
    const dbPath = tempDbPath();
    const wf = twoStep(dbPath, { failB: true, calls: {} });
    const first = await runWorkflow(wf, { input: { topic: "x" } });
    const error = await runWorkflow(wf, { input: { topic: "y" }, runId: first.runId, resume: true }).catch((e) => e);
    expect(SmithersError.is(error, "INPUT_MISMATCH")).toBe(true);
    expect(await query(dbPath, "SELECT status FROM _smithers_runs")).toEqual([{ status: "failed" }]);
    expect(await query(dbPath, "SELECT topic FROM input")).toEqual([{ topic: "x" }]);
  });

  test("resuming an unknown run rejects with RUN_NOT_FOUND; reusing a run id without resume rejects with RUN_EXISTS", async () => {
    const dbPath = tempDbPath();
    const wf = twoStep(dbPath, { failB: false, calls: {} });
    expect((await runWorkflow(wf, { runId: "nope", resume: true }).catch((e) => e)).code).toBe("RUN_NOT_FOUND");
    await runWorkflow(wf, { input: { topic: "x" }, runId: "r1" });
    expect((await runWorkflow(wf, { input: { topic: "x" }, runId: "r1" }).catch((e) => e)).code).toBe("RUN_EXISTS");
  });

  test("resuming a cancelled run gives the cancelled task a new attempt", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    let slow = true;
    const controller = new AbortController();
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="t" output={outputs.out}>
          {async () => {
            if (slow) {
              setTimeout(() => controller.abort(), 10);
              await Bun.sleep(3_000);
            }
            return { n: 5 };
          }}
        </Task>
      </Workflow>
    ));
    const first = await runWorkflow(wf, { input: {}, signal: controller.signal });
    expect(first.status).toBe("cancelled");
    slow = false;
    const second = await runWorkflow(wf, { runId: first.runId, resume: true });
    expect(second).toMatchObject({ status: "finished", output: { n: 5 } });
    expect(await query(dbPath, "SELECT attempt, state FROM _smithers_attempts ORDER BY attempt")).toEqual([
      { attempt: 1, state: "cancelled" },
      { attempt: 2, state: "finished" },
    ]);
  });

  test("attempts a dead process left running are closed as abandoned and retried on resume", async () => {
    const dbPath = tempDbPath();
    const behaviour = { failB: false, calls: {} as Record<string, number> };
    const wf = twoStep(dbPath, behaviour);
    const first = await runWorkflow(wf, { input: { topic: "x" } });
    // Rewind b to how a kill -9 during its attempt would leave it: node and attempt running, no row.
    await execute(dbPath, `UPDATE _smithers_runs SET status = 'running', runtime_owner_id = 'elsewhere:999999:x', heartbeat_at_ms = 0`);
    await execute(dbPath, `UPDATE _smithers_nodes SET state = 'running' WHERE node_id = 'b'`);
    await execute(dbPath, `UPDATE _smithers_attempts SET state = 'running', finished_at_ms = NULL WHERE node_id = 'b'`);
    await execute(dbPath, `DELETE FROM out WHERE node_id = 'b'`);
    const resumed = await runWorkflow(wf, { runId: first.runId, resume: true });
    expect(resumed.status).toBe("finished");
    expect(behaviour.calls).toEqual({ a: 1, b: 2 });
    const attempts = await query<{ attempt: number; state: string; error_json: string | null }>(
      dbPath,
      "SELECT attempt, state, error_json FROM _smithers_attempts WHERE node_id = 'b' ORDER BY attempt",
    );
    expect(attempts.map((a) => [a.attempt, a.state])).toEqual([
      [1, "abandoned"],
      [2, "finished"],
    ]);
    expect(JSON.parse(attempts[0]!.error_json!).code).toBe("TASK_ABANDONED");
  });

  test("a run whose owner is alive and heartbeating cannot be resumed (RUN_STILL_RUNNING)", async () => {
    const dbPath = tempDbPath();
    const wf = twoStep(dbPath, { failB: false, calls: {} });
    const first = await runWorkflow(wf, { input: { topic: "x" } });
    await execute(dbPath, `UPDATE _smithers_runs SET status = 'running', runtime_owner_id = ?, heartbeat_at_ms = ?`, `other-host:1:x`, Date.now());
    const error = await runWorkflow(wf, { runId: first.runId, resume: true }).catch((e) => e);
    expect(SmithersError.is(error, "RUN_STILL_RUNNING")).toBe(true);
  });

  test("resuming a run that is executing in this same process is refused with RUN_STILL_RUNNING", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    let calls = 0;
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="t" output={outputs.out}>
          {async () => {
            calls++;
            await held; // runs until the resume below has been answered
            return { n: 1 };
          }}
        </Task>
      </Workflow>
    ));
    const live = runWorkflow(wf, { input: {}, runId: "live" });
    await waitFor(() => calls === 1);
    const error = await runWorkflow(wf, { runId: "live", resume: true }).catch((e) => e);
    release();
    expect(SmithersError.is(error, "RUN_STILL_RUNNING")).toBe(true);
    expect((await live).status).toBe("finished");
    expect(calls).toBe(1);
  });

  test("a same-host owner whose heartbeat is stale is gone even if its pid was reused", async () => {
    const dbPath = tempDbPath();
    const behaviour = { failB: false, calls: {} as Record<string, number> };
    const wf = twoStep(dbPath, behaviour);
    const first = await runWorkflow(wf, { input: { topic: "x" } });
    // pid 1 is alive on every Linux host; only the day-old heartbeat shows the owner is gone.
    await execute(
      dbPath,
      "UPDATE _smithers_runs SET status = 'running', runtime_owner_id = ?, heartbeat_at_ms = ?",
      `${hostname()}:1:old`,
      Date.now() - 86_400_000,
    );
    expect((await runWorkflow(wf, { runId: first.runId, resume: true })).status).toBe("finished");
  });

  test("a crashed run resumed keeps counting its earlier failures against retries", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    let calls = 0;
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="t" output={outputs.out} retries={1} retryPolicy={{ initialDelayMs: 1 }}>
          {() => {
            calls++;
            throw new Error("still broken");
          }}
        </Task>
      </Workflow>
    ));
    const first = await runWorkflow(wf, { input: {} });
    expect(first.status).toBe("failed");
    // Make it look like the process died after attempt 1 failed, before attempt 2 ran.
    await execute(dbPath, "DELETE FROM _smithers_attempts WHERE attempt = 2");
    await execute(dbPath, "UPDATE _smithers_nodes SET state = 'pending', last_attempt = 1");
    await execute(dbPath, "UPDATE _smithers_runs SET status = 'running', runtime_owner_id = NULL, error_json = NULL");
    calls = 0;
    const resumed = await runWorkflow(wf, { runId: first.runId, resume: true });
    expect(resumed.status).toBe("failed");
    expect(calls).toBe(1); // one retry left, not a fresh budget of two attempts
    expect(await query(dbPath, "SELECT attempt, state FROM _smithers_attempts ORDER BY attempt")).toEqual([
      { attempt: 1, state: "failed" },
      { attempt: 2, state: "failed" },
    ]);
  });

  test("on resume, rows of a custom table named only by output= are in ctx before the tree is trusted", async () => {
    const dbPath = tempDbPath();
    const notes = sqliteTable("notes", {
      runId: text("run_id").notNull(),
      nodeId: text("node_id").notNull(),
      iteration: integer("iteration").notNull().default(0),
      body: text("body").notNull(),
    });
    // The author owns a custom table's creation.
    await execute(dbPath, "CREATE TABLE notes (run_id TEXT NOT NULL, node_id TEXT NOT NULL, iteration BIGINT NOT NULL DEFAULT 0, body TEXT NOT NULL)");
    let failB = true;
    // A fresh createSmithers per run, as a new process would have: nothing registered yet.
    const build = () => {
      const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
      return smithers((ctx) => (
        <Workflow name="w">
          <Task id="a" output={notes} outputSchema={z.object({ body: z.string() })}>
            {{ body: "from a" }}
          </Task>
          {ctx.outputMaybe(notes, { nodeId: "a" }) ? (
            <Task id="b" output={outputs.out} retries={0}>
              {() => {
                if (failB) throw new Error("not yet");
                return { n: 2 };
              }}
            </Task>
          ) : null}
        </Workflow>
      ));
    };
    const first = await runWorkflow(build(), { input: {} });
    expect(first.status).toBe("failed");
    failB = false;
    const resumed = await runWorkflow(build(), { runId: first.runId, resume: true });
    expect(resumed).toMatchObject({ status: "finished", output: { n: 2 } });
    expect(await query(dbPath, "SELECT node_id, n FROM out")).toEqual([{ node_id: "b", n: 2 }]);
  });
});
