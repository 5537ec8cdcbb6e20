/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { z } from "zod";
import { createSmithers, runWorkflow, SmithersError } from "../../src/index.ts";
import { columnTypes, errorOf, onPostgres, query, tempDbPath } from "../helpers.ts";

/** The column type a Zod integer gets on the backend under test. */
const INTEGER = onPostgres ? "bigint" : "integer";

describe("createSmithers output tables", () => {
  test("a schema field type that cannot be mapped is rejected with UNSUPPORTED_SCHEMA naming the field", () => {
    const dbPath = tempDbPath();
    const error = errorOf(() => createSmithers({ bad: z.object({ ok: z.string(), big: z.bigint() }) }, { dbPath }));
    expect(SmithersError.is(error, "UNSUPPORTED_SCHEMA")).toBe(true);
    expect((error as Error).message).toContain('"big"');
    expect((error as SmithersError).details.field).toBe("big");
  });

  test("a field added to a schema is added to the existing table and old rows survive", async () => {
    const dbPath = tempDbPath();
    const v1 = createSmithers({ report: z.object({ title: z.string() }) }, { dbPath });
    const wf1 = v1.smithers(() => (
      <v1.Workflow name="w">
        <v1.Task id="r" output={v1.outputs.report}>
          {{ title: "old" }}
        </v1.Task>
      </v1.Workflow>
    ));
    await runWorkflow(wf1, { input: {} });
    await v1.smithersDb.close();
    const v2 = createSmithers({ report: z.object({ title: z.string(), pages: z.number().int().optional() }) }, { dbPath });
    const wf2 = v2.smithers(() => (
      <v2.Workflow name="w">
        <v2.Task id="r" output={v2.outputs.report}>
          {{ title: "new", pages: 3 }}
        </v2.Task>
      </v2.Workflow>
    ));
    await runWorkflow(wf2, { input: {} });
    expect(await query(dbPath, "SELECT title, pages FROM report ORDER BY title")).toEqual([
      { title: "new", pages: 3 },
      { title: "old", pages: null },
    ]);
  });

  test("a type change is reported and not applied", async () => {
    const dbPath = tempDbPath();
    await createSmithers({ report: z.object({ pages: z.number().int() }) }, { dbPath }).smithersDb.close();
    const reports: unknown[] = [];
    const v2 = createSmithers({ report: z.object({ pages: z.string() }) }, { dbPath, onSchemaDrift: (r) => reports.push(r) });
    await v2.smithersDb.close();
    expect(reports).toEqual([{ created: [], added: [], removed: [], typeChanges: [{ table: "report", column: "pages", expected: "text", actual: INTEGER }] }]);
    expect((await columnTypes(dbPath, "report")).pages).toBe(INTEGER);
  });

  test("a payload-only schema stores the whole output in its payload column", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers({ blob: z.object({ payload: z.unknown() }) }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="b" output={outputs.blob}>
          {() => ({ anything: [1, { deep: true }] }) as never}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.output).toEqual({ payload: { anything: [1, { deep: true }] } });
    expect(await query(dbPath, "SELECT payload FROM blob")).toEqual([{ payload: '{"anything":[1,{"deep":true}]}' }]);
  });

  test("a custom Drizzle table with the bookkeeping columns receives the row", async () => {
    const dbPath = tempDbPath();
    const audits = sqliteTable("audit_log", {
      runId: text("run_id").notNull(),
      nodeId: text("node_id").notNull(),
      iteration: integer("iteration").notNull().default(0),
      message: text("message").notNull(),
    });
    const { Workflow, Task, smithers } = createSmithers({ audits }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="log" output={audits} outputSchema={z.object({ message: z.string() })}>
          {{ message: "hi" }}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.status).toBe("finished");
    expect(await query(dbPath, "SELECT run_id, node_id, message FROM audit_log")).toEqual([{ run_id: result.runId, node_id: "log", message: "hi" }]);
  });

  test("a custom Drizzle table without node_id is rejected with CUSTOM_TABLE_INVALID naming the column", () => {
    const table = sqliteTable("bare", { runId: text("run_id").notNull(), message: text("message") });
    const error = errorOf(() => createSmithers({ table }, { dbPath: tempDbPath() }));
    expect(SmithersError.is(error, "CUSTOM_TABLE_INVALID")).toBe(true);
    expect((error as Error).message).toContain("node_id");
  });
});

describe("runWorkflow authoring errors", () => {
  test("a Task without output fails the run with MISSING_OUTPUT and leaves no node rows", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    const wf = smithers(() => (
      <Workflow name="w">
        {/* @ts-expect-error output is required */}
        <Task id="t">{{ n: 1 }}</Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("MISSING_OUTPUT");
    const runs = await query<{ status: string; error_json: string }>(dbPath, "SELECT status, error_json FROM _smithers_runs");
    expect(runs.map((r) => [r.status, JSON.parse(r.error_json).code])).toEqual([["failed", "MISSING_OUTPUT"]]);
    expect(await query(dbPath, "SELECT count(*) AS n FROM _smithers_nodes")).toEqual([{ n: 0 }]);
  });

  test("two Tasks with the same id in one render fail the run with DUPLICATE_ID before anything runs", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, Parallel, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    let ran = 0;
    const wf = smithers(() => (
      <Workflow name="w">
        <Parallel>
          <Task id="same" output={outputs.out}>
            {() => ({ n: ++ran })}
          </Task>
          <Task id="same" output={outputs.out}>
            {() => ({ n: ++ran })}
          </Task>
        </Parallel>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.error?.code).toBe("DUPLICATE_ID");
    expect(ran).toBe(0);
    expect(await query(dbPath, "SELECT count(*) AS n FROM out")).toEqual([{ n: 0 }]);
  });

  test("an output target that is not one of the workflow's schemas fails with OUTPUT_NOT_FOUND", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
    const stranger = z.object({ n: z.number() });
    const wf = smithers(() => (
      <Workflow name="w">
        <Task id="t" output={stranger}>
          {{ n: 1 }}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.error?.code).toBe("OUTPUT_NOT_FOUND");
    expect(await query(dbPath, "SELECT status FROM _smithers_runs")).toEqual([{ status: "failed" }]);
  });
});
