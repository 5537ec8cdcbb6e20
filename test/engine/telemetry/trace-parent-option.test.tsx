/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers, runWorkflow } from "../../../src/index.ts";
import { isTraceparent } from "../../../src/engine/index.ts";
import { query, rejection, tempDbPath } from "../../helpers.ts";

const CALLER = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

function oneTask(dbPath: string) {
  const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ ok: z.boolean() }) }, { dbPath });
  return smithers(() => (
    <Workflow name="traced">
      <Task id="t" output={outputs.out}>
        {{ ok: true }}
      </Task>
    </Workflow>
  ));
}

describe("runWorkflow traceParent", () => {
  test("a new run stores the traceparent it is given, so any later process continues that trace", async () => {
    const dbPath = tempDbPath();
    expect((await runWorkflow(oneTask(dbPath), { runId: "r", traceParent: CALLER })).status).toBe("finished");
    expect(await query(dbPath, "SELECT trace_parent FROM _smithers_runs")).toEqual([{ trace_parent: CALLER }]);
  });

  test("a malformed traceparent is INVALID_OPTION and no run is made", async () => {
    const dbPath = tempDbPath();
    const wf = oneTask(dbPath);
    await runWorkflow(wf, { runId: "before" });
    const error = await rejection(runWorkflow(wf, { runId: "r", traceParent: "00-abc-def-01" }));
    expect(error.code).toBe("INVALID_OPTION");
    expect(await query(dbPath, "SELECT run_id FROM _smithers_runs")).toEqual([{ run_id: "before" }]);
  });
});

describe("isTraceparent", () => {
  test("takes version 00 with a non-zero trace id and span id in lowercase hex, and nothing else", () => {
    expect(isTraceparent(CALLER)).toBe(true);
    expect(isTraceparent(CALLER.toUpperCase())).toBe(false);
    expect(isTraceparent("00-00000000000000000000000000000000-00f067aa0ba902b7-01")).toBe(false);
    expect(isTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01")).toBe(false);
    expect(isTraceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")).toBe(false);
    expect(isTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7")).toBe(false);
  });
});
