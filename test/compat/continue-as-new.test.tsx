/** @jsxImportSource smithers-workflows */
/**
 * `<ContinueAsNew>` and `<Loop continueAsNewEvery>` as smithers-orchestrator's documentation
 * describes them (its "<ContinueAsNew>" and "<Loop>" pages, and its run status contract), written
 * here in our own words.
 */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { continueAsNew, createSmithers, runWorkflow, type Continuation } from "../../src/index.ts";
import { sql, tempDbPath } from "../helpers.ts";

type Cursor = { cursor: number; count: number };

/** The continuation a run was started with, if any. */
const continuationOf = <P,>(input: unknown) => (input as { __smithersContinuation?: Continuation<P> }).__smithersContinuation;

describe("<ContinueAsNew>", () => {
  test("closes the run as `continued` and opens a new run, linked both ways, whose ctx.input carries the state as __smithersContinuation.payload", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, Sequence, ContinueAsNew, smithers, outputs } = createSmithers(
      { page: z.object({ cursor: z.number(), items: z.number() }) },
      { dbPath },
    );
    const wf = smithers((ctx) => {
      const carried = continuationOf<Cursor>(ctx.input)?.payload;
      const cursor = carried?.cursor ?? 0;
      const page = ctx.outputMaybe(outputs.page, { nodeId: "process-batch" });
      return (
        <Workflow name="paginated-processor">
          <Sequence>
            <Task id="process-batch" output={outputs.page}>
              {{ cursor, items: 10 }}
            </Task>
            {page && cursor < 20 ? <ContinueAsNew state={{ cursor: cursor + 10, count: (carried?.count ?? 0) + 1 }} /> : null}
          </Sequence>
        </Workflow>
      );
    });

    const result = await runWorkflow(wf, { input: {}, runId: "pages" });

    expect(result).toMatchObject({ runId: "pages~2", status: "finished", output: { cursor: 20, items: 10 } });
    expect(sql(dbPath, "SELECT run_id, status, next_run_id, continued_from_run_id FROM _smithers_runs ORDER BY created_at_ms, run_id")).toEqual([
      { run_id: "pages", status: "continued", next_run_id: "pages~1", continued_from_run_id: null },
      { run_id: "pages~1", status: "continued", next_run_id: "pages~2", continued_from_run_id: "pages" },
      { run_id: "pages~2", status: "finished", next_run_id: null, continued_from_run_id: "pages~1" },
    ]);
    // Each run processed its own page: the state moved the cursor on.
    expect(sql(dbPath, "SELECT run_id, cursor FROM page ORDER BY cursor")).toEqual([
      { run_id: "pages", cursor: 0 },
      { run_id: "pages~1", cursor: 10 },
      { run_id: "pages~2", cursor: 20 },
    ]);
    expect(
      sql(dbPath, "SELECT run_id, json_extract(payload_json, '$.newRunId') AS next FROM _smithers_events WHERE type = 'RunContinuedAsNew' ORDER BY seq"),
    ).toEqual([
      { run_id: "pages", next: "pages~1" },
      { run_id: "pages~1", next: "pages~2" },
    ]);
  });

  test("the workflow's name and input persist across continuations; only the run id moves on", async () => {
    const dbPath = tempDbPath();
    const schemas = { input: z.object({ topic: z.string() }), note: z.object({ text: z.string() }) };
    const { Workflow, Task, smithers, outputs } = createSmithers(schemas, { dbPath });
    const seen: unknown[] = [];
    const wf = smithers((ctx) => {
      const generation = continuationOf(ctx.input)?.generation ?? 0;
      const note = ctx.outputMaybe(outputs.note, { nodeId: "note" });
      return (
        <Workflow name="notes">
          <Task id="note" output={outputs.note}>
            {() => {
              seen.push({ topic: ctx.input.topic, generation, runId: ctx.runId });
              return { text: `${ctx.input.topic} #${generation}` };
            }}
          </Task>
          {note && generation < 1 ? continueAsNew({ from: generation }) : null}
        </Workflow>
      );
    });

    expect(await runWorkflow(wf, { input: { topic: "tides" }, runId: "n" })).toMatchObject({ runId: "n~1", status: "finished", output: { text: "tides #1" } });

    expect(seen).toEqual([
      { topic: "tides", generation: 0, runId: "n" },
      { topic: "tides", generation: 1, runId: "n~1" },
    ]);
    expect(sql(dbPath, "SELECT run_id, workflow_name FROM _smithers_runs ORDER BY run_id")).toEqual([
      { run_id: "n", workflow_name: "notes" },
      { run_id: "n~1", workflow_name: "notes" },
    ]);
    expect(sql(dbPath, "SELECT run_id, topic FROM input ORDER BY run_id")).toEqual([
      { run_id: "n", topic: "tides" },
      { run_id: "n~1", topic: "tides" },
    ]);
  });

  test("what comes after <ContinueAsNew> in the same sequence never runs in the run that continued", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, ContinueAsNew, smithers, outputs } = createSmithers({ step: z.object({ ok: z.boolean() }) }, { dbPath });
    const wf = smithers((ctx) => (
      <Workflow name="cut">
        <Task id="before" output={outputs.step}>
          {{ ok: true }}
        </Task>
        {continuationOf(ctx.input) ? null : <ContinueAsNew />}
        <Task id="after" output={outputs.step}>
          {{ ok: true }}
        </Task>
      </Workflow>
    ));

    expect((await runWorkflow(wf, { input: {}, runId: "c" })).status).toBe("finished");

    expect(sql(dbPath, "SELECT run_id, node_id FROM _smithers_nodes ORDER BY run_id, node_id")).toEqual([
      { run_id: "c", node_id: "before" },
      { run_id: "c~1", node_id: "after" },
      { run_id: "c~1", node_id: "before" },
    ]);
  });

  test("state must be JSON: a BigInt fails the run with INVALID_CONTINUATION_STATE, more than 10 MB with CONTINUATION_STATE_TOO_LARGE, and no new run is made", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, ContinueAsNew, smithers, outputs } = createSmithers({ step: z.object({ ok: z.boolean() }) }, { dbPath });
    const withState = (state: unknown) =>
      smithers(() => (
        <Workflow name="bad-state">
          <Task id="a" output={outputs.step}>
            {{ ok: true }}
          </Task>
          <ContinueAsNew state={state} />
        </Workflow>
      ));

    const notJson = await runWorkflow(withState({ n: 1n }), { input: {}, runId: "b1" });
    const tooLarge = await runWorkflow(withState({ blob: "x".repeat(10 * 1024 * 1024) }), { input: {}, runId: "b2" });

    expect([notJson.status, notJson.error?.code]).toEqual(["failed", "INVALID_CONTINUATION_STATE"]);
    expect([tooLarge.status, tooLarge.error?.code]).toEqual(["failed", "CONTINUATION_STATE_TOO_LARGE"]);
    expect(sql(dbPath, "SELECT run_id, status, next_run_id FROM _smithers_runs ORDER BY run_id")).toEqual([
      { run_id: "b1", status: "failed", next_run_id: null },
      { run_id: "b2", status: "failed", next_run_id: null },
    ]);
  });
});

describe("<ContinueAsNew> as a <TryCatchFinally> catch (the docs' durable /clear handoff)", () => {
  test("a caught failure hands a distilled state to a fresh run, which goes on from it", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, Loop, TryCatchFinally, ContinueAsNew, smithers, outputs } = createSmithers(
      { step: z.object({ summary: z.string(), done: z.boolean() }) },
      { dbPath },
    );
    type Distilled = { goal: string; generation: number; lastSummary: string };
    const wf = smithers((ctx) => {
      const carried = continuationOf<Distilled>(ctx.input)?.payload;
      const generation = (carried?.generation ?? 0) + 1;
      const steps = ctx.outputs.step ?? [];
      const last = steps[steps.length - 1] as { summary: string; done: boolean } | undefined;
      const distilled: Distilled = { goal: "green tests", generation, lastSummary: last?.summary ?? carried?.lastSummary ?? "" };
      return (
        <Workflow name="context-handoff">
          <TryCatchFinally
            catchErrors={["TASK_FAILED"]}
            catch={<ContinueAsNew state={distilled} />}
            try={
              <Loop id="work" until={last?.done === true} maxIterations={5}>
                <Task id="step" output={outputs.step} noRetry>
                  {({ iteration }) => {
                    // The first generation makes one step of progress, then blows its budget.
                    if (generation === 1 && iteration === 1) throw new Error("context budget exceeded");
                    return { summary: `gen ${generation} step ${iteration} after "${carried?.lastSummary ?? ""}"`, done: generation === 2 };
                  }}
                </Task>
              </Loop>
            }
          />
        </Workflow>
      );
    });

    const result = await runWorkflow(wf, { input: {}, runId: "handoff" });

    expect(result).toMatchObject({ runId: "handoff~1", status: "finished", output: { summary: 'gen 2 step 0 after "gen 1 step 0 after """', done: true } });
    expect(
      sql(dbPath, "SELECT run_id, status, json_extract(continuation_json, '$.payload.generation') AS generation FROM _smithers_runs ORDER BY run_id"),
    ).toEqual([
      { run_id: "handoff", status: "continued", generation: null },
      { run_id: "handoff~1", status: "finished", generation: 1 },
    ]);
  });
});

describe("<Loop continueAsNewEvery>", () => {
  test("checkpoints every N iterations into a new run: each run holds at most N iterations, the loop goes on where it was, and until sees the latest output", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, Loop, smithers, outputs } = createSmithers(
      { setup: z.object({ ok: z.boolean() }), tick: z.object({ n: z.number().int() }) },
      { dbPath },
    );
    let setups = 0;
    const ticks: [string, number][] = [];
    const wf = smithers((ctx) => {
      const last = ctx.latest(outputs.tick, "tick") as { n: number } | undefined;
      return (
        <Workflow name="long-loop">
          <Task id="setup" output={outputs.setup}>
            {() => {
              setups++;
              return { ok: true };
            }}
          </Task>
          <Loop id="ticker" until={(last?.n ?? -1) >= 7} maxIterations={100} continueAsNewEvery={3}>
            <Task id="tick" output={outputs.tick}>
              {({ iteration, runId }) => {
                ticks.push([runId, iteration]);
                return { n: iteration };
              }}
            </Task>
          </Loop>
        </Workflow>
      );
    });

    expect(await runWorkflow(wf, { input: {}, runId: "t" })).toMatchObject({ runId: "t~2", status: "finished", output: { n: 7 } });

    // Iterations 0-2 ran in "t", 3-5 in "t~1", 6-7 in "t~2"; each exactly once, the setup task once.
    expect(ticks).toEqual([
      ["t", 0],
      ["t", 1],
      ["t", 2],
      ["t~1", 3],
      ["t~1", 4],
      ["t~1", 5],
      ["t~2", 6],
      ["t~2", 7],
    ]);
    expect(setups).toBe(1);
    expect(sql(dbPath, "SELECT run_id, status, next_run_id FROM _smithers_runs ORDER BY created_at_ms, run_id")).toEqual([
      { run_id: "t", status: "continued", next_run_id: "t~1" },
      { run_id: "t~1", status: "continued", next_run_id: "t~2" },
      { run_id: "t~2", status: "finished", next_run_id: null },
    ]);
    // Every attempt belongs to the run that made it: history does not pile up in one run.
    expect(sql(dbPath, "SELECT run_id, count(*) AS n FROM _smithers_attempts WHERE node_id = 'tick' GROUP BY run_id ORDER BY run_id")).toEqual([
      { run_id: "t", n: 3 },
      { run_id: "t~1", n: 3 },
      { run_id: "t~2", n: 2 },
    ]);
    // A new run starts with the latest row of each task (what until and later tasks read), not the whole history.
    expect(sql(dbPath, "SELECT run_id, group_concat(n) AS ns FROM (SELECT * FROM tick ORDER BY n) GROUP BY run_id ORDER BY run_id")).toEqual([
      { run_id: "t", ns: "0,1,2" },
      { run_id: "t~1", ns: "2,3,4,5" },
      { run_id: "t~2", ns: "5,6,7" },
    ]);
  });
});
