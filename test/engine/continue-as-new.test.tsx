/** @jsxImportSource smithers-workflows */
/** Continuing a run as a new one: the chain's ids, history per run, and what reaches a continued run (resume, signals, approvals, subflows). */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { openSmithersDb, runs } from "../../src/db/index.ts";
import { successorRunId } from "../../src/engine/run/continue-as-new.ts";
import { pendingApprovals, smithersEventSchema, supervise } from "../../src/engine/index.ts";
import { createSmithers, Parallel, runWorkflow, sendSignal, Sequence, Subflow, type Continuation, type SmithersWorkflow } from "../../src/index.ts";
import { execute, query, rejection, sleepUnlessAborted, tempDbPath } from "../helpers.ts";

const generationOf = (input: unknown) => (input as { __smithersContinuation?: Continuation }).__smithersContinuation?.generation ?? 0;

const schemas = { step: z.object({ n: z.number().int() }), go: z.object({ ok: z.boolean() }) };

describe("successorRunId", () => {
  test("a run continues as <id>~1, a continuation as the next generation of the first run's id", () => {
    expect(successorRunId("p", null)).toEqual({ runId: "p~1", generation: 1 });
    expect(successorRunId("p~1", "p")).toEqual({ runId: "p~2", generation: 2 });
    expect(successorRunId("a~b~9", "a~b~8")).toEqual({ runId: "a~b~10", generation: 10 });
  });

  test("an id that merely ends in ~N but continues nothing starts its own chain", () => {
    expect(successorRunId("nightly~5", null)).toEqual({ runId: "nightly~5~1", generation: 1 });
  });
});

describe("a chain of runs", () => {
  test("resuming any run of a chain resumes its last run; starting a run id that exists is RUN_EXISTS", async () => {
    const { Workflow, Task, ContinueAsNew, smithers, outputs } = createSmithers(schemas, { dbPath: tempDbPath() });
    const wf = smithers((ctx) => (
      <Workflow name="chain">
        <Task id="a" output={outputs.step}>
          {{ n: 1 }}
        </Task>
        {generationOf(ctx.input) === 0 ? <ContinueAsNew /> : null}
      </Workflow>
    ));
    await runWorkflow(wf, { input: {}, runId: "r" });

    expect(await runWorkflow(wf, { runId: "r", resume: true })).toMatchObject({ runId: "r~1", status: "finished" });
    expect((await rejection(runWorkflow(wf, { input: {}, runId: "r" }))).code).toBe("RUN_EXISTS");
  });

  test("each run's history stays the size of its own iterations, however long the chain", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, Loop, smithers, outputs } = createSmithers(schemas, { dbPath });
    const wf = smithers(() => (
      <Workflow name="long">
        <Loop id="l" until={false} maxIterations={30} continueAsNewEvery={5}>
          <Task id="tick" output={outputs.step}>
            {({ iteration }) => ({ n: iteration })}
          </Task>
        </Loop>
      </Workflow>
    ));

    expect(await runWorkflow(wf, { input: {}, runId: "h" })).toMatchObject({ runId: "h~5", status: "finished", output: { n: 29 } });

    const per = async (table: string) =>
      (await query<{ run_id: string; n: number }>(dbPath, `SELECT run_id, count(*) AS n FROM ${table} GROUP BY run_id`)).map((r) => r.n);
    expect((await per("_smithers_runs")).length).toBe(6);
    expect(await per("_smithers_attempts")).toEqual([5, 5, 5, 5, 5, 5]);
    // The first run and the last have the same shape of history: nothing accumulates along the chain.
    for (const table of ["_smithers_frames", "_smithers_events", "_smithers_nodes"]) {
      const counts = await per(table);
      expect(Math.max(...counts)).toBeLessThanOrEqual(Math.min(...counts) + 2);
      expect(Math.max(...counts)).toBeLessThan(40); // 30 iterations in one run would be six times this
    }
    const events = await query<{ run_id: string; type: string; payload_json: string; seq: number; timestamp_ms: number }>(
      dbPath,
      "SELECT run_id, type, payload_json, seq, timestamp_ms FROM _smithers_events WHERE type = 'RunContinuedAsNew' ORDER BY run_id",
    );
    for (const e of events) {
      const parsed = smithersEventSchema().parse({ type: e.type, runId: e.run_id, timestampMs: e.timestamp_ms, ...JSON.parse(e.payload_json) });
      expect(parsed).toMatchObject({ status: "continued", carriedStateSize: 0 });
    }
    expect(events.map((e) => JSON.parse(e.payload_json).iteration)).toEqual([5, 10, 15, 20, 25]);
  });

  test("once <ContinueAsNew> is reached nothing new starts, and what runs finishes in the old run before it continues", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, ContinueAsNew, smithers, outputs } = createSmithers(schemas, { dbPath });
    const wf = smithers((ctx) => (
      <Workflow name="settle">
        <Parallel>
          <Task id="slow" output={outputs.step}>
            {async ({ signal }) => {
              await sleepUnlessAborted(80, signal);
              return { n: signal.aborted ? -1 : 1 };
            }}
          </Task>
          <Sequence>
            <Task id="fast" output={outputs.step}>
              {{ n: 2 }}
            </Task>
            {generationOf(ctx.input) === 0 ? <ContinueAsNew /> : null}
          </Sequence>
          <Task id="gated" output={outputs.step} dependsOn={["fast"]}>
            {{ n: 3 }}
          </Task>
        </Parallel>
      </Workflow>
    ));

    expect((await runWorkflow(wf, { input: {}, runId: "s" })).runId).toBe("s~1");

    expect(await query(dbPath, "SELECT node_id, state FROM _smithers_nodes WHERE run_id = 's' ORDER BY node_id")).toEqual([
      { node_id: "fast", state: "finished" },
      { node_id: "slow", state: "finished" },
    ]);
    expect(await query(dbPath, "SELECT n FROM step WHERE run_id = 's' AND node_id = 'slow'")).toEqual([{ n: 1 }]);
  });
});

describe("what reaches a continued run", () => {
  test("a signal sent to the first run's id is stored for, and wakes, the last run of its chain", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, WaitForEvent, ContinueAsNew, smithers, outputs, smithersDb } = createSmithers(schemas, { dbPath });
    const wf = smithers((ctx) =>
      generationOf(ctx.input) === 0 ? (
        <Workflow name="waits-later">
          <Task id="a" output={outputs.step}>
            {{ n: 0 }}
          </Task>
          <ContinueAsNew />
        </Workflow>
      ) : (
        <Workflow name="waits-later">
          <WaitForEvent id="go" event="go" output={outputs.go} />
        </Workflow>
      ),
    );
    expect(await runWorkflow(wf, { input: {}, runId: "w" })).toMatchObject({ runId: "w~1", status: "waiting-event" });

    const sent = await sendSignal(smithersDb, { runId: "w", name: "go", data: { ok: true } });

    expect(sent).toMatchObject({ runId: "w~1", waitingNodes: [{ nodeId: "go", iteration: 0 }] });
    expect(await query(dbPath, "SELECT run_id, wake_at_ms IS NOT NULL AS due FROM _smithers_runs WHERE status = 'waiting-event'")).toEqual([
      { run_id: "w~1", due: 1 },
    ]);
    const outcomes = await supervise({ db: smithersDb, resolveWorkflow: () => wf });
    expect(outcomes).toMatchObject([{ runId: "w~1", action: "resumed", result: { status: "finished", output: { ok: true } } }]);
  });

  test("the approvals of a continued run are those of the last run of its chain", async () => {
    const { Workflow, Task, Approval, ContinueAsNew, smithers, outputs, smithersDb } = createSmithers(
      {
        ...schemas,
        decision: z.object({ approved: z.boolean(), note: z.string().nullable(), decidedBy: z.string().nullable(), decidedAt: z.string().nullable() }),
      },
      { dbPath: tempDbPath() },
    );
    const wf = smithers((ctx) => (
      <Workflow name="gate-later">
        <Task id="a" output={outputs.step}>
          {{ n: 0 }}
        </Task>
        {generationOf(ctx.input) === 0 ? <ContinueAsNew /> : <Approval id="ship" output={outputs.decision} request={{ title: "Ship?" }} />}
      </Workflow>
    ));
    expect((await runWorkflow(wf, { input: {}, runId: "g" })).status).toBe("waiting-approval");

    expect(await pendingApprovals(smithersDb, "g")).toMatchObject([{ runId: "g~1", nodeId: "ship" }]);
  });

  test("a <Subflow> child that continues as new gives its parent the result of the last run of its chain", async () => {
    const dbPath = tempDbPath();
    const child = createSmithers(schemas);
    const childWf: SmithersWorkflow = child.smithers((ctx) => (
      <child.Workflow name="child">
        <child.Task id="c" output={child.outputs.step}>
          {{ n: generationOf(ctx.input) }}
        </child.Task>
        {generationOf(ctx.input) < 2 ? <child.ContinueAsNew /> : null}
      </child.Workflow>
    ));
    const { Workflow, smithers, outputs } = createSmithers(schemas, { dbPath });
    const wf = smithers(() => (
      <Workflow name="parent">
        <Subflow id="sub" workflow={childWf} output={outputs.step} />
      </Workflow>
    ));

    expect(await runWorkflow(wf, { input: {}, runId: "p" })).toMatchObject({ runId: "p", status: "finished", output: { n: 2 } });
    expect(await query(dbPath, "SELECT run_id, parent_run_id, status FROM _smithers_runs ORDER BY created_at_ms, run_id")).toEqual([
      { run_id: "p", parent_run_id: null, status: "finished" },
      { run_id: "p/sub#0", parent_run_id: "p", status: "continued" },
      { run_id: "p/sub#0~1", parent_run_id: "p", status: "continued" },
      { run_id: "p/sub#0~2", parent_run_id: "p", status: "finished" },
    ]);
  });
});

test("an older database gains the continuation columns of _smithers_runs in place, keeping its runs", async () => {
  const dbPath = tempDbPath();
  await execute(
    dbPath,
    `CREATE TABLE "_smithers_runs" ("run_id" text PRIMARY KEY NOT NULL, "parent_run_id" text, "workflow_name" text NOT NULL,
    "workflow_path" text, "workflow_hash" text, "status" text NOT NULL, "created_at_ms" bigint NOT NULL, "started_at_ms" bigint,
    "finished_at_ms" bigint, "heartbeat_at_ms" bigint, "runtime_owner_id" text, "cancel_requested_at_ms" bigint, "vcs_type" text,
    "vcs_root" text, "vcs_revision" text, "input_hash" text, "error_json" text, "config_json" text, "wake_at_ms" bigint)`,
  );
  await execute(dbPath, `INSERT INTO "_smithers_runs" ("run_id", "workflow_name", "status", "created_at_ms") VALUES ('old', 'w', 'finished', 1)`);

  const db = openSmithersDb(dbPath);
  expect((await runs.getRun(db, "old"))?.status).toBe("finished"); // waits for the tables to be brought up to date
  await db.close();

  const [row] = await query(dbPath, "SELECT * FROM _smithers_runs");
  expect(Object.keys(row!)).toEqual(expect.arrayContaining(["next_run_id", "continued_from_run_id", "continuation_json", "root_dir"]));
  expect(row).toMatchObject({ run_id: "old", status: "finished", next_run_id: null });
});
