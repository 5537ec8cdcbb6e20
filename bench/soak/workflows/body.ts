/**
 * The task body every soak workflow runs. Before anything else it appends one line to
 * $SOAK_EXEC_FILE, outside any transaction: `runId nodeId iteration attempt pid`. The checker
 * compares those lines with the committed attempts, so a body run again after its task committed
 * shows up there even when the database holds only one row.
 */
import { appendFileSync } from "node:fs";
import { z } from "zod";
import type { TaskRunContext } from "../../../src/index.ts";

/** Chance that a body throws (and its task is retried); $SOAK_FAIL_P, default 0.2. */
const failP = Number(process.env.SOAK_FAIL_P ?? 0.2);
/** Longest pause of a body in ms ($SOAK_PAUSE_MS, default 250): long enough that kill -9 lands inside bodies. */
const maxPause = Number(process.env.SOAK_PAUSE_MS ?? 250);

/** Retries a soak task gets: enough that a random failure rarely fails its run, with a short fixed wait. */
export const RETRIES = 4;
export const RETRY_POLICY = { backoff: "fixed", initialDelayMs: 150 } as const;

/** A body that records its execution, pauses, fails at random, then returns `value()` with its attempt. */
export function work(value: () => number = () => 0) {
  return async (t: TaskRunContext) => {
    if (process.env.SOAK_EXEC_FILE) appendFileSync(process.env.SOAK_EXEC_FILE, `${t.runId} ${t.nodeId} ${t.iteration} ${t.attempt} ${process.pid}\n`);
    await Bun.sleep(1 + Math.floor(Math.random() * maxPause));
    if (Math.random() < failP) throw new Error(`soak: random failure of ${t.nodeId} attempt ${t.attempt}`);
    return { value: value(), attempt: t.attempt };
  };
}

/** The one input schema of every soak workflow: they share the `input` table, so they share its columns. */
export const soakInputSchema = z.object({ n: z.number().int(), onDeny: z.enum(["fail", "continue"]), wait: z.string() });
