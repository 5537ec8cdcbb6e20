/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { z } from "zod";
import { createSmithers, Subflow } from "smithers-workflows";
import { runs } from "../../src/db/index.ts";
import { rejection } from "../helpers.ts";
import { testWorkflow } from "smithers-workflows/testing";

function loopWorkflow() {
  const { Workflow, Task, Loop, smithers, outputs } = createSmithers({
    input: z.object({ name: z.string() }),
    greeting: z.object({ message: z.string() }),
    count: z.object({ n: z.number() }),
  });
  return smithers((ctx) => (
    <Workflow name="outputs">
      <Task id="greet" output={outputs.greeting}>
        {{ message: `Hello, ${ctx.input.name}!` }}
      </Task>
      <Loop id="loop" until={(ctx.latest<{ n: number }>(outputs.count, "count")?.n ?? 0) >= 3} maxIterations={5}>
        <Task id="count" output={outputs.count}>
          {{ n: ctx.iteration + 1 }}
        </Task>
      </Loop>
    </Workflow>
  ));
}

describe("testWorkflow", () => {
  test("output reads a task's row (its latest iteration, or the one asked), outputs every task's by node id", async () => {
    await using t = await testWorkflow(loopWorkflow());
    const run = await t.run({ name: "Ada" });
    expect(run.status).toBe("finished");
    expect(t.output(run.runId, "greet")).toEqual({ message: "Hello, Ada!" });
    expect(t.output(run.runId, "count")).toEqual({ n: 3 });
    expect(t.output(run.runId, "count", { iteration: 0 })).toEqual({ n: 1 });
    expect(t.output(run.runId, "missing")).toBeUndefined();
    expect(t.outputs(run.runId)).toEqual({ greet: { message: "Hello, Ada!" }, count: { n: 3 } });
  });

  test("bad input rejects t.run with INVALID_INPUT, as runWorkflow does", async () => {
    await using t = await testWorkflow(loopWorkflow());
    expect(await rejection(t.run({ name: 3 }))).toMatchObject({ code: "INVALID_INPUT" });
  });

  test("each test gets a database of its own: in memory by default, runs of another test are not seen", async () => {
    const workflow = loopWorkflow();
    await using a = await testWorkflow(workflow);
    await using b = await testWorkflow(workflow);
    await a.run({ name: "A" });
    expect(a.db.path).toBe(":memory:");
    expect(await a.runs()).toHaveLength(1);
    expect(await b.runs()).toEqual([]);
  });

  test('{ db: "file" } stores runs in a temp file that close() deletes', async () => {
    const t = await testWorkflow(loopWorkflow(), { db: "file" });
    const run = await t.run({ name: "Ada" });
    expect(t.db.path).toEndWith("smithers.db");
    expect(existsSync(t.db.path)).toBe(true);
    expect(t.output(run.runId, "greet")).toEqual({ message: "Hello, Ada!" });
    await t.close();
    expect(existsSync(t.db.path)).toBe(false);
    expect(await rejection(t.run({ name: "late" }))).toMatchObject({ code: "INVALID_OPTION" });
  });

  test("close() cancels a run whose task still runs, without waiting for it", async () => {
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ ok: z.boolean() }) });
    const workflow = smithers(() => (
      <Workflow name="hang">
        <Task id="hang" output={outputs.out}>
          {() => new Promise<{ ok: boolean }>(() => {})}
        </Task>
      </Workflow>
    ));
    const t = await testWorkflow(workflow);
    const pending = t.run();
    await t.clock.advance(0);
    await t.close();
    expect(await pending).toMatchObject({ status: "cancelled" });
  });

  test("a run's row and events are stamped by the virtual clock, not the database's", async () => {
    await using t = await testWorkflow(loopWorkflow(), { startAt: Date.UTC(2020, 1, 2) });
    const run = await t.run({ name: "Ada" });
    const row = await runs.getRun(t.db, run.runId);
    expect([row?.createdAtMs, row?.heartbeatAtMs, row?.finishedAtMs]).toEqual([Date.UTC(2020, 1, 2), Date.UTC(2020, 1, 2), Date.UTC(2020, 1, 2)]);
    expect(new Set(t.events(run.runId).map((e) => e.timestampMs))).toEqual(new Set([Date.UTC(2020, 1, 2)]));
  });

  test("a <Subflow> child runs on the test's database and clock: its 1-day timer holds the parent until the clock passes it", async () => {
    const child = createSmithers({ done: z.object({ ok: z.boolean() }) });
    const childWorkflow = child.smithers(
      () => (
        <child.Workflow name="child">
          <child.Timer id="cool-off" duration="1d" />
          <child.Task id="done" output={child.outputs.done}>
            {{ ok: true }}
          </child.Task>
        </child.Workflow>
      ),
      { output: child.outputs.done },
    );
    const { Workflow, smithers, outputs } = createSmithers({ sub: z.object({ ok: z.boolean() }) });
    const parent = smithers(() => (
      <Workflow name="parent">
        <Subflow id="sub" workflow={childWorkflow} output={outputs.sub} />
      </Workflow>
    ));
    await using t = await testWorkflow(parent);
    const run = await t.run();
    expect(run.status).toBe("waiting-timer");
    await t.clock.advance(86_400_000);
    expect(await t.resume(run.runId)).toMatchObject({ status: "finished" });
    expect(t.output(run.runId, "sub")).toEqual({ ok: true });
  });
});
