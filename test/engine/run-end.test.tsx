/**
 * The run's last transaction: what it closes that the engine lost track of, and what a run of
 * static tasks alone (whose attempts are stored as they end) need not look for.
 */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers, runWorkflow } from "../../src/index.ts";
import { execute, query, sqliteOnly, statementsRun, tempDbPath } from "../helpers.ts";

describe("runWorkflow", () => {
  test("an attempt still recorded running when the run ends (one the engine lost track of) is closed failed with ENGINE_ERROR", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="ghost">
        <Task id="work" output={outputs.out}>
          {async () => {
            // Written from another connection while the task runs: a running attempt no step of this run made.
            const runId = (await query<{ run_id: string }>(dbPath, "SELECT run_id FROM _smithers_runs"))[0]!.run_id;
            await execute(
              dbPath,
              "INSERT INTO _smithers_attempts (run_id, node_id, iteration, attempt, state, started_at_ms) VALUES (?, 'ghost', 0, 1, 'running', 1)",
              runId,
            );
            return { n: 1 };
          }}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.status).toBe("finished");
    expect(await query(dbPath, "SELECT node_id, state FROM _smithers_attempts ORDER BY node_id")).toEqual([
      { node_id: "ghost", state: "failed" },
      { node_id: "work", state: "finished" },
    ]);
    const failed = await query<{ payload_json: string }>(dbPath, "SELECT payload_json FROM _smithers_events WHERE type = 'NodeFailed'");
    expect(failed.map((e) => (JSON.parse(e.payload_json) as { nodeId: string; error: { code: string } }).error.code)).toEqual(["ENGINE_ERROR"]);
  });

  sqliteOnly("counts the statements SQLite runs")(
    "a run of static tasks alone, whose attempts are stored as they end, does not look for attempts left running",
    async () => {
      const dbPath = tempDbPath();
      const { Workflow, Task, smithers, outputs, smithersDb } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
      const wf = smithers(() => (
        <Workflow name="static">
          <Task id="a" output={outputs.out}>
            {{ n: 1 }}
          </Task>
        </Workflow>
      ));
      const texts = statementsRun(smithersDb);
      expect((await runWorkflow(wf, { input: {} })).status).toBe("finished");
      expect(await query(dbPath, "SELECT node_id, state FROM _smithers_attempts")).toEqual([{ node_id: "a", state: "finished" }]);
      expect(texts.filter((t) => t.includes("'running'"))).toEqual([]);
    },
  );
});
