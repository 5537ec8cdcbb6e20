/** @jsxImportSource smithers-workflows */
/** frameHistory (every frame of a run in one pass) and planChanges (what changed between two frames). */
import { expect, test } from "bun:test";
import { z } from "zod";
import { openSmithersDb } from "../../src/db/index.ts";
import { clearFrameCache, frameHistory, planChanges, frameNodes, readFrame } from "../../src/engine/index.ts";
import { createSmithers, runWorkflow } from "../../src/index.ts";
import { tempDbPath } from "../helpers.ts";

const ROUNDS = 70; // more frames than the keyframe interval (50): the history crosses a keyframe

async function loopRun() {
  const dbPath = tempDbPath();
  const { Workflow, Task, Loop, smithers, outputs } = createSmithers({ step: z.object({ n: z.number() }) }, { dbPath });
  const wf = smithers((ctx) => (
    <Workflow name="timeline">
      <Task id="first" output={outputs.step}>
        {{ n: 0 }}
      </Task>
      <Loop id="l" until={ctx.iterationCount(outputs.step, "round") >= ROUNDS} maxIterations={ROUNDS + 1}>
        <Task id="round" output={outputs.step}>
          {() => ({ n: ctx.iteration })}
        </Task>
      </Loop>
    </Workflow>
  ));
  const result = await runWorkflow(wf, { runId: "tl" });
  expect(result.status).toBe("finished");
  return openSmithersDb(dbPath);
}

test("frameHistory gives every frame, in order, equal to the frame readFrame rebuilds on its own", async () => {
  const db = await loopRun();
  try {
    const history = [];
    for await (const frame of frameHistory(db, "tl")) history.push(frame);
    expect(history.length).toBeGreaterThan(ROUNDS);
    expect(history.map((f) => f.frameNo)).toEqual(history.map((_, i) => i));
    clearFrameCache();
    for (const f of history) expect(f.tree).toEqual(await readFrame(db, "tl", f.frameNo));
    // From a frame in the middle, and up to another.
    const part = [];
    for await (const frame of frameHistory(db, "tl", 55, 60)) part.push(frame.frameNo);
    expect(part).toEqual([55, 56, 57, 58, 59, 60]);
  } finally {
    await db.close();
  }
});

test("planChanges lists mounted nodes, state changes, and loop iterations as nodes of their own", async () => {
  const db = await loopRun();
  try {
    const first = await readFrame(db, "tl", 0);
    const mounted = planChanges(undefined, first);
    expect(mounted.mounted.map((n) => [n.tag, n.id, n.iteration])).toEqual(frameNodes(first).map((n) => [n.tag, n.id, n.iteration]));
    expect(mounted.mounted.map((n) => n.id)).toContain("first");
    const second = await readFrame(db, "tl", 1);
    const step = planChanges(first, second);
    expect(step.changed.find((c) => c.id === "first")?.props.state).toEqual({ from: "running", to: "finished" });
    expect(planChanges(second, second)).toEqual({ mounted: [], unmounted: [], changed: [] });
    // Across many frames the loop's later iterations appear as mounted nodes, the earlier one changes state.
    const later = planChanges(second, await readFrame(db, "tl", 10));
    expect(later.mounted.some((n) => n.id === "round" && n.iteration > 0)).toBe(true);
    expect(planChanges(await readFrame(db, "tl", 10), second).unmounted.some((n) => n.id === "round" && n.iteration > 0)).toBe(true);
  } finally {
    await db.close();
  }
});
