/** `inspect` (and GET /runs/:id, which prints the same report) lists a run's tasks in the order the workflow declares them. */
import { expect, test } from "bun:test";
import { openSmithersDb } from "../../src/db/index.ts";
import { approve, loadWorkflowFile, runWorkflow } from "../../src/engine/index.ts";
import { inspectRun } from "../../src/engine/index.ts";
import { tempDbPath } from "../helpers.ts";

test("tasks come in plan order, not the order their rows were stored", async () => {
  const dbPath = tempDbPath();
  const gate = await loadWorkflowFile("test/fixtures/server/gate.tsx");
  expect((await runWorkflow(gate, { runId: "g", dbPath })).status).toBe("waiting-approval");
  const db = openSmithersDb(dbPath);
  try {
    await approve(db, { runId: "g", nodeId: "ship" });
    expect((await runWorkflow(gate, { runId: "g", resume: true, dbPath })).status).toBe("finished");
    const stored = await db.read("order", (q) => q.all<{ id: string }>(`SELECT node_id AS id FROM _smithers_nodes WHERE run_id = 'g'`));
    const report = await inspectRun(db, "g");
    expect(report.nodes.map((n) => n.nodeId)).toEqual(["ship", "after"]);
    expect(new Set(stored.map((r) => r.id))).toEqual(new Set(["ship", "after"]));
  } finally {
    await db.close();
  }
});
