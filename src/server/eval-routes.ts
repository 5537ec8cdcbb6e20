/**
 * What the run page's scores and the compare view read: GET /runs/:id/scores (every scorer result
 * of the run, in the order recorded) and GET /runs/:a/compare/:b (the two runs task by task, as
 * `smithers eval compare --json`). 404 RUN_NOT_FOUND for a run not stored.
 */
import type { Hono } from "hono";
import type { RunComparison, RunScores } from "../contract/index.ts";
import type { SmithersDb } from "../db/index.ts";
import { compareRuns, scoreRowsOfRun } from "../engine/index.ts";
import { SmithersError } from "../errors/index.ts";
import { knownRun } from "./routes.ts";

export function registerEvalRoutes(app: Hono, db: SmithersDb): void {
  app.get("/runs/:id/scores", async (c) => {
    const runId = c.req.param("id");
    await knownRun(db, runId); // a queued run has no scores yet: an empty list
    return c.json({ runId, scores: await scoreRowsOfRun(db, runId) } satisfies RunScores);
  });

  app.get("/runs/:id/compare/:other", async (c) => {
    const [a, b] = [c.req.param("id"), c.req.param("other")];
    for (const runId of [a, b]) {
      const { run } = await knownRun(db, runId);
      if (!run) throw new SmithersError("RUN_NOT_FOUND", `Run "${runId}" is queued and has not started: it has no tasks to compare yet`, { runId });
    }
    return c.json((await compareRuns(db, a, b)) satisfies RunComparison);
  });
}
