/** A run a daemon claims and cannot resume is handed back and says why: a RunResumeFailed event, shown by ps. */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { formatRunTable } from "../../src/cli/ps.ts";
import { events, openSmithersDb } from "../../src/db/index.ts";
import { listRunSummaries, supervise } from "../../src/engine/index.ts";
import { approvalDecisionSchema, approve, createSmithers, runWorkflow } from "../../src/index.ts";
import { tempDbPath } from "../helpers.ts";

function gated(dbPath: string) {
  const { Workflow, Task, Approval, smithers, outputs } = createSmithers({ approval: approvalDecisionSchema, done: z.object({ ok: z.boolean() }) }, { dbPath });
  return smithers(() => (
    <Workflow name="gated">
      <Approval id="ship" output={outputs.approval} request={{ title: "Ship?" }} />
      <Task id="after" output={outputs.done}>
        {{ ok: true }}
      </Task>
    </Workflow>
  ));
}

describe("a resume that fails", () => {
  test("is journalled once per reason, shown by ps until a later resume goes ahead, and the run stays due", async () => {
    const dbPath = tempDbPath();
    const wf = gated(dbPath);
    expect((await runWorkflow(wf, { runId: "g", workflowPath: "/nowhere/gated.tsx" })).status).toBe("waiting-approval");
    const db = openSmithersDb(dbPath);
    try {
      await approve(db, { runId: "g", nodeId: "ship", by: "ada" });
      const broken = () => {
        throw new Error("cannot load /nowhere/gated.tsx here");
      };
      for (let pass = 0; pass < 3; pass++) {
        const outcomes = await supervise({ db, resolveWorkflow: broken });
        expect(outcomes.map((o) => [o.runId, o.action])).toEqual([["g", "released"]]);
      }
      const journal = await events.listEventHistory(db, { runId: "g", types: ["RunResumeFailed"] });
      expect(journal.map((e) => JSON.parse(e.payloadJson).reason)).toEqual(["Error: cannot load /nowhere/gated.tsx here"]);

      const [summary] = await listRunSummaries(db, { limit: 5 });
      expect(summary?.status).toBe("waiting-approval");
      expect(summary?.resumeFailure?.reason).toBe("Error: cannot load /nowhere/gated.tsx here");
      expect(formatRunTable([summary!]).at(-1)).toMatch(/^! g: resuming failed at \S+ \(\S+\): Error: cannot load/);

      const resumed = await supervise({ db, resolveWorkflow: () => wf });
      expect(resumed.map((o) => [o.runId, o.action, o.action === "resumed" ? o.result.status : ""])).toEqual([["g", "resumed", "finished"]]);
      expect((await listRunSummaries(db, { limit: 5 }))[0]?.resumeFailure).toBeNull();
    } finally {
      await db.close();
    }
  });
});
