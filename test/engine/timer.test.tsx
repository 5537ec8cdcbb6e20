/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { z } from "zod";
import { openSmithersDb } from "../../src/db/index.ts";
import { loadWorkflowFile, supervise } from "../../src/engine/index.ts";
import { createSmithers, runWorkflow, Timer, type SmithersEvent } from "../../src/index.ts";
import { query, tempDbPath, tempDir } from "../helpers.ts";
import { smithersAsync } from "../e2e/cli-helpers.ts";

const fixture = resolve(import.meta.dir, "../fixtures/timer.tsx");

describe("<Timer>", () => {
  test("a short timer is waited for in the process: the next task starts after its fire time, and it writes no row", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ step: z.object({ at: z.number() }) }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="short">
        <Task id="before" output={outputs.step}>
          {() => ({ at: Date.now() })}
        </Task>
        <Timer id="pause" duration="80ms" />
        <Task id="after" output={outputs.step}>
          {() => ({ at: Date.now() })}
        </Task>
      </Workflow>
    ));
    const events: SmithersEvent[] = [];
    const result = await runWorkflow(wf, { input: {}, onEvent: (e) => events.push(e) });
    expect(result.status).toBe("finished");
    const scheduled = events.find((e) => e.type === "TimerScheduled");
    const after = (await query<{ at: number }>(dbPath, "SELECT at FROM step WHERE node_id = 'after'"))[0]!;
    expect(scheduled && "fireAtMs" in scheduled).toBe(true);
    expect(after.at).toBeGreaterThanOrEqual((scheduled as { fireAtMs: number }).fireAtMs);
    expect(events.filter((e) => e.type.startsWith("Timer")).map((e) => e.type)).toEqual(["TimerScheduled", "TimerFired"]);
    expect(await query(dbPath, "SELECT node_id, state, wake_at_ms FROM _smithers_nodes WHERE node_id = 'pause'")).toEqual([
      { node_id: "pause", state: "finished", wake_at_ms: null },
    ]);
    expect(await query(dbPath, "SELECT count(*) AS n FROM step WHERE node_id = 'pause'")).toEqual([{ n: 0 }]);
  });

  test("a longer timer ends the run waiting-timer with its fire time stored; an early resume waits again without moving it; once due the daemon resumes it", async () => {
    const dbPath = tempDbPath();
    const workflow = await loadWorkflowFile(fixture);
    const callsFile = join(tempDir(), "calls.txt");
    process.env.CALLS_FILE = callsFile;
    try {
      const first = await runWorkflow(workflow, { input: {}, runId: "t1", dbPath, workflowPath: fixture, waitInPlaceMs: 0 });
      expect(first).toEqual({ runId: "t1", status: "waiting-timer" });
      const [run] = await query<{ status: string; wake_at_ms: number }>(dbPath, "SELECT status, wake_at_ms FROM _smithers_runs");
      const [node] = await query<{ state: string; wake_at_ms: number }>(dbPath, "SELECT state, wake_at_ms FROM _smithers_nodes WHERE node_id = 'cool-down'");
      expect([run!.status, node!.state]).toEqual(["waiting-timer", "waiting-timer"]);
      expect(run!.wake_at_ms).toBe(node!.wake_at_ms);
      const early = await runWorkflow(workflow, { runId: "t1", resume: true, dbPath, waitInPlaceMs: 0 });
      expect(early.status).toBe("waiting-timer");
      expect(await query(dbPath, "SELECT wake_at_ms FROM _smithers_nodes WHERE node_id = 'cool-down'")).toEqual([{ wake_at_ms: node!.wake_at_ms }]);
      const db = openSmithersDb(dbPath);
      try {
        expect(await supervise({ db, now: () => node!.wake_at_ms - 1 })).toEqual([]); // not due yet: nothing to wake
        await Bun.sleep(Math.max(0, node!.wake_at_ms - Date.now()) + 10);
        const woken = await supervise({ db });
        expect(woken.map((o) => [o.runId, o.action, o.action === "resumed" ? o.result.status : undefined])).toEqual([["t1", "resumed", "finished"]]);
      } finally {
        await db.close();
      }
      expect(readFileSync(callsFile, "utf8").trim().split("\n")).toEqual(["before", "after"]);
    } finally {
      delete process.env.CALLS_FILE;
    }
  });

  test("two `smithers supervise` processes with a due timer: the run is resumed exactly once", async () => {
    const dbPath = tempDbPath();
    const workflow = await loadWorkflowFile(fixture);
    expect((await runWorkflow(workflow, { input: {}, runId: "t2", dbPath, workflowPath: fixture, waitInPlaceMs: 0 })).status).toBe("waiting-timer");
    const [node] = await query<{ wake_at_ms: number }>(dbPath, "SELECT wake_at_ms FROM _smithers_nodes WHERE node_id = 'cool-down'");
    await Bun.sleep(Math.max(0, node!.wake_at_ms - Date.now()) + 10);
    const callsFile = join(tempDir(), "calls.txt");
    const args = ["supervise", "--db", dbPath];
    const results = await Promise.all([smithersAsync(args, { CALLS_FILE: callsFile }), smithersAsync(args, { CALLS_FILE: callsFile })]);
    expect(results.filter((r) => r.stdout.includes("resumed t2 finished"))).toHaveLength(1);
    expect(readFileSync(callsFile, "utf8").trim().split("\n")).toEqual(["after"]);
    expect(await query(dbPath, "SELECT status FROM _smithers_runs")).toEqual([{ status: "finished" }]);
  });

  test("an until in the past fires at once", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ step: z.object({ n: z.number() }) }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="past">
        <Timer id="t" until={new Date(Date.now() - 60_000)} />
        <Task id="next" output={outputs.step}>
          {{ n: 1 }}
        </Task>
      </Workflow>
    ));
    expect((await runWorkflow(wf, { input: {}, waitInPlaceMs: 0 })).status).toBe("finished");
  });

  test("both or neither of duration and until, an unparseable duration or until: INVALID_TIMER; every or meta: UNSUPPORTED_PROP", async () => {
    const { Workflow, smithers } = createSmithers({ step: z.object({ n: z.number() }) }, { dbPath: tempDbPath() });
    const bad: object[] = [{}, { duration: "1s", until: new Date() }, { duration: "soon" }, { duration: "10" }, { until: "not a date" }];
    for (const props of [...bad, { duration: "1s", every: "1h" }, { duration: "1s", meta: { why: "cool-down" } }]) {
      const wf = smithers(() => (
        <Workflow name="bad">
          <Timer id="t" {...(props as { duration?: string })} />
        </Workflow>
      ));
      const result = await runWorkflow(wf, { input: {} });
      expect([result.status, result.error?.code]).toEqual(["failed", bad.includes(props) ? "INVALID_TIMER" : "UNSUPPORTED_PROP"]);
    }
  });
});
