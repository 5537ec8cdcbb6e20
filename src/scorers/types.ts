/** The scorer contract: what a scorer gets, what it returns, and how a task binds one (the peer's names). */
import type { z } from "zod";

/** What a scorer judges: one finished attempt of a task. */
export type ScorerInput = {
  /** An agent task's prompt; otherwise the run's input (ctx.input). */
  input: unknown;
  /** The attempt's validated output row (as the task returned it, before storage). */
  output: unknown;
  /** The task's `groundTruth` prop. */
  groundTruth?: unknown;
  /** The task's `context` prop. */
  context?: unknown;
  /** How long the attempt took, start to end. */
  latencyMs?: number;
  /** The task's output schema, when it has a Zod one. */
  outputSchema?: z.ZodType;
  /** Aborted when the scorer's timeout passes: a scorer that calls out should stop then. */
  signal?: AbortSignal;
};

/** A score in 0..1, with an optional reason and JSON-able details (stored as `meta_json`). */
export type ScoreResult = { score: number; reason?: string; meta?: Record<string, unknown> };

export type ScorerFn = (input: ScorerInput) => ScoreResult | Promise<ScoreResult>;

/** A named scoring function; `id` and `name` are stored on each row it writes. */
export type Scorer = { id: string; name: string; description: string; score: ScorerFn };

/** Which finished attempts a binding scores: every one, a deterministic share of them, or none. */
export type SamplingConfig = { type: "all" } | { type: "ratio"; rate: number } | { type: "none" };

/** One entry of `<Task scorers>`: the scorer, its sampling (default all) and its timeout (default 30 s). */
export type ScorerBinding = { scorer: Scorer; sampling?: SamplingConfig; timeoutMs?: number };

/** `<Task scorers>`: bindings by a name unique within the task. */
export type ScorersMap = Record<string, ScorerBinding>;
