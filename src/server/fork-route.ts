/**
 * `POST /runs/:id/fork`: a fork of a run this server serves the workflow of (see forkRun),
 * optionally queued to run at once. Body: `{ frame, resetNodes?, input?, runId?, force?, run? }`.
 * 201 with the fork (status `paused`), or 202 when `run` queued it; a side effect the fork would
 * run again is 409 SIDE_EFFECT_BOUNDARY unless `force`.
 */
import type { Context, Hono } from "hono";
import { z } from "zod";
import { runs, type SmithersDb } from "../db/index.ts";
import { forkRun } from "../engine/index.ts";
import { SmithersError } from "../errors/index.ts";
import type { RunQueue } from "./queue.ts";

export const ForkBody = z.strictObject({
  frame: z.number().int().nonnegative(),
  resetNodes: z.array(z.string().min(1)).optional(),
  input: z.unknown().optional(),
  runId: z.string().min(1).optional(),
  force: z.boolean().optional(),
  run: z.boolean().optional(),
});

export function registerForkRoute(
  app: Hono,
  o: { db: SmithersDb; queue: RunQueue; body: <S extends z.ZodType>(c: Context, schema: S) => Promise<z.infer<S>> },
): void {
  app.post("/runs/:id/fork", async (c) => {
    const b = await o.body(c, ForkBody);
    const parentRunId = c.req.param("id");
    const parent = await runs.getRun(o.db, parentRunId);
    if (!parent) throw new SmithersError("RUN_NOT_FOUND", `No run "${parentRunId}"`, { runId: parentRunId });
    const served = o.queue.workflowOf(parent);
    const fork = await forkRun(served.workflow, {
      db: o.db,
      runId: parentRunId,
      frame: b.frame,
      ...(b.resetNodes ? { resetNodes: b.resetNodes } : {}),
      ...(b.input === undefined ? {} : { input: b.input }),
      ...(b.runId ? { newRunId: b.runId } : {}),
      force: Boolean(b.force),
      workflowPath: served.path,
    });
    if (!b.run) return c.json({ ...fork, status: "paused" }, 201);
    await o.queue.enqueue({ workflow: served.name, runId: fork.runId, resume: true });
    return c.json({ ...fork, status: "queued" }, 202);
  });
}
