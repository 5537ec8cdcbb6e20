/** @jsxImportSource smithers-workflows */
import { expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers, runWorkflow, type SmithersEvent } from "../../src/index.ts";
import { query, tempDbPath } from "../helpers.ts";

test("a run cancelled during a timed-out attempt's grace period journals no retry that never happens", async () => {
  const dbPath = tempDbPath();
  const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ v: z.number() }) }, { dbPath });
  const controller = new AbortController();
  const events: SmithersEvent[] = [];
  const wf = smithers(() => (
    <Workflow name="w">
      <Task id="t" output={outputs.out} timeoutMs={20} retries={2}>
        {async () => {
          await Bun.sleep(150);
          return { v: 1 };
        }}
      </Task>
    </Workflow>
  ));
  const result = await runWorkflow(wf, {
    input: {},
    signal: controller.signal,
    onEvent: (e) => {
      events.push(e);
      if (e.type === "NodeStarted") setTimeout(() => controller.abort(), 60);
    },
  });
  expect(result.status).toBe("cancelled");
  expect(events.map((e) => e.type).filter((t) => t.startsWith("Node"))).toEqual(["NodeStarted", "NodeFailed"]);
  expect(await query(dbPath, "SELECT state FROM _smithers_nodes")).toEqual([{ state: "failed" }]);
});
