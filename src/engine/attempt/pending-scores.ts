/**
 * Which scorers an attempt that finished gets (sampling, decided here so a replay agrees), as the
 * `pending` rows written with its outcome, and what each scorer is given.
 */
import type { z } from "zod";
import type { OutputTableInfo, scorers as scoreRows } from "../../db/index.ts";
import type { PlanTask } from "../../jsx/index.ts";
import { isSampled, type ScorerBinding, type ScorerInput } from "../../scorers/index.ts";

/** One scorer to run on one attempt: its row's id, the binding, and what the scorer judges. */
export type ScoreJob = { rowId: string; binding: ScorerBinding; input: ScorerInput };

type AttemptKey = { runId: string; nodeId: string; iteration: number; attempt: number };

/** A pending row's id; the binding's name ends it (what a later process matches the binding by). */
export function scoreRowId(key: AttemptKey, name: string): string {
  return `${key.runId}/${key.nodeId}/${key.iteration}/${key.attempt}/${name}`;
}

/** The sampled bindings of a finished attempt, by name. */
export function sampledBindings(task: PlanTask, key: AttemptKey): [string, ScorerBinding][] {
  if (!task.scorers) return [];
  return Object.entries(task.scorers).filter(([name, b]) => isSampled(b.sampling, scoreRowId(key, name)));
}

/** What every scorer of the attempt is given. `runInput`: ctx.input, the input of a task that has no prompt. */
export function scorerInput(task: PlanTask, info: OutputTableInfo, runInput: unknown, output: unknown, latencyMs: number | undefined): ScorerInput {
  const schema: z.ZodType | undefined = info.schema ?? task.outputSchema;
  return {
    input: task.mode === "agent" ? task.prompt : runInput,
    output,
    ...(task.groundTruth === undefined ? {} : { groundTruth: task.groundTruth }),
    ...(task.context === undefined ? {} : { context: task.context }),
    ...(latencyMs === undefined ? {} : { latencyMs }),
    ...(schema ? { outputSchema: schema } : {}),
  };
}

/**
 * The pending rows recorded with the attempt's outcome, in its transaction, so a crash before the
 * scorers ran leaves rows for the next process (latency: the attempt's start to its end).
 */
export function pendingScoreRows(task: PlanTask, key: AttemptKey, latencyMs: number, atMs: number): scoreRows.NewScoreRow[] {
  return sampledBindings(task, key).map(([name, b]) => ({
    id: scoreRowId(key, name),
    ...key,
    scorerId: b.scorer.id,
    scorerName: b.scorer.name,
    source: "live",
    status: "pending",
    latencyMs,
    scoredAtMs: atMs,
  }));
}
