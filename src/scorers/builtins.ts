/** createScorer and the built-in scorers that need no model: schema adherence and latency against a target. */
import type { z } from "zod";
import { SmithersError } from "../errors/index.ts";
import { formatZodIssues } from "../schema/index.ts";
import type { Scorer, ScorerFn, ScoreResult } from "./types.ts";

export type CreateScorerConfig = { id: string; name: string; description: string; score: ScorerFn };

/**
 * A custom scorer. `score` gets the attempt (input, output, groundTruth, context, latencyMs,
 * outputSchema) and returns a score in 0..1 with an optional reason and meta.
 * @example
 * const nonEmpty = createScorer({ id: "non-empty", name: "Non-empty", description: "The summary has text", score: ({ output }) => ({ score: (output as { summary: string }).summary ? 1 : 0 }) });
 */
export function createScorer(config: CreateScorerConfig): Scorer {
  if (typeof config?.id !== "string" || config.id === "" || typeof config.name !== "string" || typeof config.score !== "function")
    throw new SmithersError("INVALID_SCORER", "createScorer needs an id, a name and a score function");
  return { id: config.id, name: config.name, description: config.description ?? "", score: config.score };
}

/**
 * 1 when the attempt's output validates against the task's output schema, else 0 with the first
 * issue as the reason. A task without a Zod output schema makes the scorer fail (SCORER_FAILED).
 * Only finished attempts are scored and their output already passed the schema, so this scorer
 * guards outputs whose schema changed since, and documents adherence per attempt.
 */
export function schemaAdherenceScorer(): Scorer {
  return createScorer({
    id: "schema-adherence",
    name: "Schema adherence",
    description: "1 when the output validates against the task's output schema, else 0",
    score: ({ output, outputSchema }): ScoreResult => {
      if (!outputSchema) throw new SmithersError("SCORER_FAILED", "schemaAdherenceScorer: the task has no Zod output schema to check against");
      const parsed = (outputSchema as z.ZodType).safeParse(output);
      if (parsed.success) return { score: 1, reason: "The output matches the schema" };
      return { score: 0, reason: formatZodIssues(parsed.error.issues.slice(0, 1), "; ") };
    },
  });
}

/**
 * 1 at or below `targetMs`, falling linearly to 0 at `maxMs` (and 0 beyond); the attempt's
 * latency is its start to its end.
 * @example latencyScorer({ targetMs: 5_000, maxMs: 30_000 })
 */
export function latencyScorer(opts: { targetMs: number; maxMs: number }): Scorer {
  const { targetMs, maxMs } = opts ?? ({} as { targetMs: number; maxMs: number });
  if (
    !(typeof targetMs === "number" && targetMs >= 0 && Number.isFinite(targetMs)) ||
    !(typeof maxMs === "number" && maxMs > targetMs && Number.isFinite(maxMs))
  )
    throw new SmithersError("INVALID_SCORER", `latencyScorer needs 0 <= targetMs < maxMs (finite), got targetMs ${String(targetMs)}, maxMs ${String(maxMs)}`, {
      targetMs,
      maxMs,
    });
  return createScorer({
    id: "latency",
    name: "Latency",
    description: `1 at or below ${targetMs} ms, 0 at ${maxMs} ms or more`,
    score: ({ latencyMs }): ScoreResult => {
      if (typeof latencyMs !== "number") throw new SmithersError("SCORER_FAILED", "latencyScorer: the attempt has no latency");
      const score = latencyMs <= targetMs ? 1 : latencyMs >= maxMs ? 0 : (maxMs - latencyMs) / (maxMs - targetMs);
      return { score, reason: `${latencyMs} ms (target ${targetMs} ms, max ${maxMs} ms)`, meta: { latencyMs, targetMs, maxMs } };
    },
  });
}
