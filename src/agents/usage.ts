/**
 * Token usage and cost: read from whatever an agent reports (an AgentUsage, or an AI SDK
 * result's `usage` / `totalUsage`), added up, and priced from a table the caller gives.
 */
import { SmithersError } from "../errors/index.ts";
import type { AgentUsage, ModelTokens } from "./types.ts";

/** US dollars per million tokens of one model. `cachedInputPerMTok` defaults to `inputPerMTok`. */
export type ModelPrice = { inputPerMTok: number; cachedInputPerMTok?: number; outputPerMTok: number };

/** Prices by model id (as the provider reports it, e.g. `claude-sonnet-4-5`, `gpt-5`). */
export type ModelPricing = Readonly<Record<string, ModelPrice>>;

const count = (value: unknown): number | undefined => (typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : undefined);

/**
 * Reads usage in either shape: AgentUsage (`inputTokens`, `cachedInputTokens`, `outputTokens`,
 * `costUsd`, `model`) or the AI SDK's LanguageModelUsage (`inputTokenDetails.cacheReadTokens`).
 * Undefined when it holds no count at all.
 *
 * @example
 * normalizeUsage({ inputTokens: 10, inputTokenDetails: { cacheReadTokens: 4 }, outputTokens: 3 });
 * // { inputTokens: 10, cachedInputTokens: 4, outputTokens: 3 }
 */
export function normalizeUsage(raw: unknown, model?: string): AgentUsage | undefined {
  if (typeof raw !== "object" || raw === null) return undefined;
  const r = raw as Record<string, unknown>;
  const details = typeof r.inputTokenDetails === "object" && r.inputTokenDetails !== null ? (r.inputTokenDetails as Record<string, unknown>) : {};
  const usage: AgentUsage = {};
  const input = count(r.inputTokens);
  const cached = count(r.cachedInputTokens) ?? count(details.cacheReadTokens);
  const output = count(r.outputTokens);
  const cost = count(r.costUsd);
  if (input !== undefined) usage.inputTokens = input;
  if (cached !== undefined) usage.cachedInputTokens = cached;
  if (output !== undefined) usage.outputTokens = output;
  if (cost !== undefined) usage.costUsd = cost;
  const named = typeof r.model === "string" ? r.model : model;
  if (input === undefined && cached === undefined && output === undefined && cost === undefined) return undefined;
  if (named !== undefined) usage.model = named;
  const models = modelsOf(r.models);
  if (models !== undefined) usage.models = models;
  return usage;
}

/** A per-model breakdown as AgentUsage holds it, or undefined when `raw` is not one. */
function modelsOf(raw: unknown): Record<string, ModelTokens> | undefined {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return undefined;
  const out: Record<string, ModelTokens> = {};
  for (const [model, value] of Object.entries(raw)) {
    if (typeof value !== "object" || value === null) return undefined;
    const v = value as Record<string, unknown>;
    const tokens: ModelTokens = {};
    for (const field of ["inputTokens", "cachedInputTokens", "outputTokens"] as const) {
      const n = count(v[field]);
      if (n !== undefined) tokens[field] = n;
    }
    out[model] = tokens;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** Both breakdowns added model by model; none when either call had none (its tokens would be unattributed). */
function addModels(a: AgentUsage["models"], b: AgentUsage["models"]): Record<string, ModelTokens> | undefined {
  if (!a || !b) return undefined;
  const out: Record<string, ModelTokens> = {};
  for (const model of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const x = a[model] ?? {};
    const y = b[model] ?? {};
    const tokens: ModelTokens = {};
    for (const field of ["inputTokens", "cachedInputTokens", "outputTokens"] as const) {
      if (x[field] !== undefined || y[field] !== undefined) tokens[field] = (x[field] ?? 0) + (y[field] ?? 0);
    }
    out[model] = tokens;
  }
  return out;
}

/** The sum of two usages; a field stays undefined only while both are. The model is kept when both agree. */
export function addUsage(a: AgentUsage | undefined, b: AgentUsage | undefined): AgentUsage | undefined {
  if (!a) return b;
  if (!b) return a;
  const sum = (x: number | undefined, y: number | undefined) => (x === undefined && y === undefined ? undefined : (x ?? 0) + (y ?? 0));
  const out: AgentUsage = {};
  const fields = ["inputTokens", "cachedInputTokens", "outputTokens", "costUsd"] as const;
  for (const field of fields) {
    const value = sum(a[field], b[field]);
    if (value !== undefined) out[field] = value;
  }
  if (a.model !== undefined && a.model === b.model) out.model = a.model;
  const models = addModels(a.models, b.models);
  if (models) out.models = models;
  return out;
}

/**
 * The usage with `costUsd` filled from `pricing` when the agent did not report one and its model has a price.
 * With a per-model breakdown (`models`), each model that used tokens is priced at its own price, and
 * the cost stays unknown unless every one of them has a price.
 */
export function priceUsage(usage: AgentUsage | undefined, pricing: ModelPricing | undefined): AgentUsage | undefined {
  if (!usage || usage.costUsd !== undefined || !pricing) return usage;
  const used = Object.entries(usage.models ?? {}).filter(([, t]) => (t.inputTokens ?? 0) + (t.outputTokens ?? 0) > 0);
  if (used.length > 0) {
    let costUsd = 0;
    for (const [model, tokens] of used) {
      const price = pricing[model];
      if (!price) return usage;
      costUsd += costOf(tokens, price);
    }
    return { ...usage, costUsd };
  }
  if (usage.model === undefined) return usage;
  const price = pricing[usage.model];
  if (!price) return usage;
  return { ...usage, costUsd: costOf(usage, price) };
}

function costOf(tokens: ModelTokens, price: ModelPrice): number {
  const input = tokens.inputTokens ?? 0;
  const cached = Math.min(tokens.cachedInputTokens ?? 0, input);
  return (
    ((input - cached) * price.inputPerMTok + cached * (price.cachedInputPerMTok ?? price.inputPerMTok) + (tokens.outputTokens ?? 0) * price.outputPerMTok) / 1e6
  );
}

/** Checks a pricing table given as an option: every price a finite number >= 0. */
export function checkPricing(pricing: unknown): ModelPricing | undefined {
  if (pricing === undefined) return undefined;
  const bad = (why: string) => new SmithersError("INVALID_OPTION", `pricing ${why}`);
  if (typeof pricing !== "object" || pricing === null || Array.isArray(pricing)) throw bad("must map model ids to { inputPerMTok, outputPerMTok }");
  for (const [model, price] of Object.entries(pricing)) {
    const p = price as Record<string, unknown> | null;
    if (typeof p !== "object" || p === null) throw bad(`["${model}"] must be { inputPerMTok, outputPerMTok, cachedInputPerMTok? }`);
    for (const field of ["inputPerMTok", "outputPerMTok", "cachedInputPerMTok"]) {
      const value = p[field];
      if (value === undefined && field === "cachedInputPerMTok") continue;
      if (count(value) === undefined) throw bad(`["${model}"].${field} must be a number >= 0, got ${String(value)}`);
    }
  }
  return pricing as ModelPricing;
}
