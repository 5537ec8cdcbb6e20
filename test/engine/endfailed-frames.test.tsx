/** @jsxImportSource smithers-workflows */
import { expect, test } from "bun:test";
import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { z } from "zod";
import { createSmithers, runWorkflow } from "../../src/index.ts";
import { query, tempDbPath } from "../helpers.ts";

test("every FrameCommitted event journaled by a run whose step SQLite refused names a stored frame", async () => {
  const dbPath = tempDbPath();
  const strict = sqliteTable("strict_rows", {
    runId: text("run_id").notNull(),
    nodeId: text("node_id").notNull(),
    iteration: integer("iteration").notNull().default(0),
    value: integer("value").notNull(),
  });
  const { Workflow, Task, smithers } = createSmithers({ strict }, { dbPath });
  const wf = smithers(() => (
    <Workflow name="refused">
      <Task id="null-into-not-null" output={strict} outputSchema={z.object({ value: z.number().nullable() })}>
        {{ value: null }}
      </Task>
    </Workflow>
  ));
  const result = await runWorkflow(wf, { input: {} });
  expect(result.error?.code).toBe("DB_WRITE_FAILED");
  const announced = (await query<{ p: string }>(dbPath, "SELECT payload_json p FROM _smithers_events WHERE type = 'FrameCommitted'")).map(
    (r) => JSON.parse(r.p).frameNo,
  );
  const stored = (await query<{ n: number }>(dbPath, "SELECT frame_no n FROM _smithers_frames")).map((r) => r.n);
  for (const n of announced) expect(stored).toContain(n);
});
