/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers, Timer } from "smithers-workflows";
import { rejection } from "../helpers.ts";
import { testWorkflow } from "smithers-workflows/testing";

const HOUR = 3_600_000;

function timerWorkflow(duration: string) {
  const { Workflow, Task, smithers, outputs } = createSmithers({ step: z.object({ done: z.boolean() }) });
  return smithers(() => (
    <Workflow name="timer">
      <Timer id="wait" duration={duration} />
      <Task id="after" output={outputs.step}>
        {{ done: true }}
      </Task>
    </Workflow>
  ));
}

describe("testWorkflow with <Timer>", () => {
  test("a 1-hour timer stops the run waiting-timer; advancing the clock an hour resumes and finishes it in well under a second", async () => {
    const started = performance.now();
    await using t = await testWorkflow(timerWorkflow("1h"));
    const run = await t.run();
    expect(run.status).toBe("waiting-timer");
    expect(t.output(run.runId, "after")).toBeUndefined();
    await t.clock.advance(HOUR - 1);
    expect((await t.runs()).map((r) => r.status)).toEqual(["waiting-timer"]);
    await t.clock.advance(1);
    expect(await t.resume(run.runId)).toMatchObject({ runId: run.runId, status: "finished" });
    expect(t.output(run.runId, "after")).toEqual({ done: true });
    expect(t.clock.now()).toBe(Date.UTC(2026, 0, 1) + HOUR);
    const fired = t.events(run.runId).find((e) => e.type === "TimerFired");
    expect(fired).toMatchObject({ nodeId: "wait", firedLateMs: 0, timestampMs: Date.UTC(2026, 0, 1) + HOUR });
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  test("a timer due within waitInPlaceMs keeps the run in the process (status running) until the clock reaches it", async () => {
    await using t = await testWorkflow(timerWorkflow("2s"));
    const run = await t.run();
    expect(run.status).toBe("running");
    await t.clock.advance(1_999);
    expect(t.output(run.runId, "after")).toBeUndefined();
    await t.clock.advance(1);
    expect(t.output(run.runId, "after")).toEqual({ done: true });
    expect((await t.resume(run.runId)).status).toBe("finished");
  });

  test("the clock starts at startAt, and an advance that goes back is refused with INVALID_OPTION", async () => {
    await using t = await testWorkflow(timerWorkflow("1m"), { startAt: new Date("2030-05-01T12:00:00Z") });
    expect(t.clock.now()).toBe(Date.UTC(2030, 4, 1, 12));
    await t.clock.advanceTo(Date.UTC(2030, 4, 1, 13));
    expect(t.clock.now()).toBe(Date.UTC(2030, 4, 1, 13));
    expect(await rejection(t.clock.advance(-1))).toMatchObject({ code: "INVALID_OPTION" });
  });
});
