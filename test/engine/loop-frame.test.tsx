/** @jsxImportSource smithers-workflows */
import { expect, test } from "bun:test";
import { z } from "zod";
import { openSmithersDb } from "../../src/db/index.ts";
import { createSmithers, runWorkflow } from "../../src/index.ts";
import { readFrameXml } from "../../src/engine/index.ts";
import { query, tempDbPath } from "../helpers.ts";

test("no frame shows a finished loop task as pending when its iteration ends", async () => {
  const dbPath = tempDbPath();
  const { Workflow, Task, Loop, smithers, outputs } = createSmithers({ step: z.object({ n: z.number() }) }, { dbPath });
  const wf = smithers((ctx) => (
    <Workflow name="loop">
      <Loop id="l" until={false} maxIterations={3}>
        <Task id="s" output={outputs.step}>
          {async () => ({ n: ctx.iteration })}
        </Task>
      </Loop>
    </Workflow>
  ));
  const result = await runWorkflow(wf, { input: {} });
  expect(result.status).toBe("finished");
  const runId = result.runId;
  const n = (await query<{ c: number }>(dbPath, "SELECT COUNT(*) c FROM _smithers_frames"))[0]!.c;
  const db = openSmithersDb(dbPath);
  const seen: string[] = [];
  for (let i = 0; i < n; i++) {
    const xml = await readFrameXml(db, runId, i);
    seen.push(`${i}: ${(xml.match(/<task[^>]*>/g) ?? []).join(" ")}`);
  }
  await db.close();
  // frame 1 is the step where s#0 finished and the loop advanced: it must show s#0 finished
  expect(seen[1]).toContain('iteration="=0" state="finished"');
});
