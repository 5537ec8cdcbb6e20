/** Checking a task's `scorers` map at render, and the sampling decision the engine makes when an attempt finishes. */
import { SmithersError } from "../errors/index.ts";
import { DEFAULT_SCORER_TIMEOUT_MS } from "./constants.ts";
import type { SamplingConfig, ScorerBinding, ScorersMap } from "./types.ts";

const BINDING_KEYS = new Set(["scorer", "sampling", "timeoutMs"]);

const invalid = (where: string, message: string, details: Record<string, unknown> = {}) => new SmithersError("INVALID_SCORER", `${where} ${message}`, details);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function checkSampling(where: string, sampling: unknown): SamplingConfig {
  if (sampling === undefined) return { type: "all" };
  if (!isObject(sampling)) throw invalid(where, 'sampling must be { type: "all" | "ratio" | "none" }');
  if (sampling.type === "all" || sampling.type === "none") return { type: sampling.type };
  if (sampling.type === "ratio") {
    const { rate } = sampling;
    if (typeof rate !== "number" || !(rate >= 0 && rate <= 1)) throw invalid(where, `sampling rate must be a number in 0..1, got ${String(rate)}`, { rate });
    return { type: "ratio", rate };
  }
  throw invalid(where, `has an unknown sampling type ${JSON.stringify(sampling.type)} (known: all, ratio, none)`, { type: sampling.type });
}

/**
 * The map as the engine runs it: each binding with a scorer object (id, name, score function),
 * its sampling (default all) and timeout (default 30 s). Anything else throws INVALID_SCORER.
 */
export function checkScorers(nodeId: string, value: unknown): ScorersMap {
  const task = `<Task id="${nodeId}">`;
  if (!isObject(value)) throw invalid(task, "scorers must be an object of { name: { scorer, sampling? } }", { nodeId });
  const out: ScorersMap = {};
  for (const [name, binding] of Object.entries(value)) {
    const where = `${task} scorer "${name}":`;
    if (!isObject(binding)) throw invalid(where, "must be { scorer, sampling?, timeoutMs? }", { nodeId, scorer: name });
    const extra = Object.keys(binding).filter((k) => !BINDING_KEYS.has(k));
    if (extra.length > 0) throw invalid(where, `has unknown fields ${extra.join(", ")} (known: scorer, sampling, timeoutMs)`, { nodeId, scorer: name });
    const { scorer } = binding;
    if (!isObject(scorer) || typeof scorer.score !== "function" || typeof scorer.id !== "string" || scorer.id === "" || typeof scorer.name !== "string")
      throw invalid(where, "needs a scorer object { id, name, description, score } (createScorer, a built-in)", { nodeId, scorer: name });
    const { timeoutMs } = binding;
    if (timeoutMs !== undefined && !(typeof timeoutMs === "number" && timeoutMs > 0 && Number.isFinite(timeoutMs)))
      throw invalid(where, `timeoutMs must be a finite number of milliseconds > 0, got ${String(timeoutMs)}`, { nodeId, scorer: name });
    out[name] = {
      scorer: scorer as unknown as ScorerBinding["scorer"],
      sampling: checkSampling(where, binding.sampling),
      timeoutMs: timeoutMs ?? DEFAULT_SCORER_TIMEOUT_MS,
    };
  }
  return out;
}

/**
 * A `<Task>`'s scorer props as its plan carries them: `scorers` checked, with the `groundTruth`
 * and `context` they are given. Those two exist only for scorers: without `scorers` they are INVALID_SCORER.
 */
export function scorerProps(nodeId: string, props: Record<string, unknown>): { scorers?: ScorersMap; groundTruth?: unknown; context?: unknown } {
  if (props.scorers === undefined) {
    if (props.groundTruth !== undefined || props.context !== undefined)
      throw invalid(`<Task id="${nodeId}">:`, "groundTruth and context are inputs to scorers; the task has no scorers", { nodeId });
    return {};
  }
  return {
    scorers: checkScorers(nodeId, props.scorers),
    ...(props.groundTruth === undefined ? {} : { groundTruth: props.groundTruth }),
    ...(props.context === undefined ? {} : { context: props.context }),
  };
}

/** FNV-1a over the key, as a fraction in [0, 1): the same attempt and binding always land alike. */
function unitHash(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) / 0x100000000;
}

/** Whether this binding scores this attempt; a ratio is decided by a hash of `key` (run, node, iteration, attempt, binding), so a replay agrees. */
export function isSampled(sampling: SamplingConfig | undefined, key: string): boolean {
  if (!sampling || sampling.type === "all") return true;
  if (sampling.type === "none") return false;
  return unitHash(key) < sampling.rate;
}
