/** @jsxImportSource smithers-workflows */
/** Scorers under the test kit's virtual clock: a scorer's timeout is workflow time, fired when the test advances the clock. */
import { expect, test } from "bun:test";
import { z } from "zod";
import { createScorer, createSmithers } from "../../src/index.ts";
import { testWorkflow } from "../../src/testing/index.ts";

const kit = createSmithers({ out: z.object({ n: z.number() }) });
const hangs = createScorer({ id: "hangs", name: "Hangs", description: "", score: () => new Promise(() => undefined) });
const quick = createScorer({ id: "quick", name: "Quick", description: "", score: () => ({ score: 1 }) });
const wf = kit.smithers(() => (
  <kit.Workflow name="kit-scored">
    <kit.Task id="t" output={kit.outputs.out} scorers={{ hangs: { scorer: hangs, timeoutMs: 60_000 }, quick: { scorer: quick } }}>
      {() => ({ n: 1 })}
    </kit.Task>
  </kit.Workflow>
));

test("a hanging scorer holds runWorkflow's return until the test advances the clock past its timeout; the run had finished", async () => {
  await using t = await testWorkflow(wf);
  const first = await t.run({}, { runId: "r" });
  expect(first.status).toBe("running"); // runWorkflow still waits for the scorer
  expect(await t.runs()).toMatchObject([{ runId: "r", status: "finished" }]);
  await t.clock.advance(60_000);
  expect((await t.resume("r")).status).toBe("finished");
  const rows = await t.db.read("scores", (q) => q.all("SELECT scorer_id, status, error FROM _smithers_scorers ORDER BY scorer_id"));
  expect(rows).toEqual([
    { scorer_id: "hangs", status: "error", error: 'SCORER_TIMEOUT: Scorer "hangs" did not finish within 60000 ms' },
    { scorer_id: "quick", status: "scored", error: null },
  ]);
});
