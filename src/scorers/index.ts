/**
 * Scorers (`smithers-workflows/scorers`): judge each finished attempt of a task after it ends, off
 * its critical path, into `_smithers_scorers`. See docs/guides/scorers.md.
 */
export type { SamplingConfig, Scorer, ScorerBinding, ScorerFn, ScorerInput, ScoreResult, ScorersMap } from "./types.ts";
export { createScorer, latencyScorer, schemaAdherenceScorer, type CreateScorerConfig } from "./builtins.ts";
export { llmJudge, type LlmJudgeConfig } from "./llm-judge.ts";
export { checkScorers, isSampled, scorerProps } from "./bindings.ts";
export { DEFAULT_SCORER_TIMEOUT_MS } from "./constants.ts";
