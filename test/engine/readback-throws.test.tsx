/** @jsxImportSource smithers-workflows */
import { expect } from "bun:test";
import { customType, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { z } from "zod";
import { createSmithers, runWorkflow } from "../../src/index.ts";
import { query, sqliteOnly, tempDbPath } from "../helpers.ts";

const touchy = customType<{ data: number; driverData: number }>({
  dataType: () => "integer",
  toDriver: (v) => v,
  fromDriver: () => {
    throw new Error("cannot decode");
  },
});

sqliteOnly("a custom Drizzle column type (customType) has no PostgreSQL mapping: createSmithers refuses it there with UNSUPPORTED_SCHEMA")(
  "a custom row that cannot be read back does not leave the next task's attempt running",
  async () => {
    const dbPath = tempDbPath();
    const custom = sqliteTable("custom_rows", {
      runId: text("run_id").notNull(),
      nodeId: text("node_id").notNull(),
      iteration: integer("iteration").notNull().default(0),
      value: touchy("value").notNull(),
    });
    const { Workflow, Task, smithers, outputs } = createSmithers({ custom, out: z.object({ v: z.number() }) }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="a" output={custom} outputSchema={z.object({ value: z.number() })}>
          {{ value: 1 }}
        </Task>
        <Task id="b" output={outputs.out}>
          {async () => ({ v: 2 })}
        </Task>
      </Workflow>
    ));
    let outcome: string;
    try {
      const r = await runWorkflow(wf, { input: {} });
      outcome = `${r.status} ${r.error?.code}`;
    } catch (e) {
      outcome = `rejected ${String(e)}`;
    }
    const attempts = await query(dbPath, "SELECT node_id, state FROM _smithers_attempts ORDER BY node_id");
    expect(outcome).toBe("failed ENGINE_ERROR");
    expect(await query(dbPath, "SELECT status FROM _smithers_runs")).toEqual([{ status: "failed" }]);
    expect(attempts.filter((a) => (a as { state: string }).state === "running")).toEqual([]);
  },
);
