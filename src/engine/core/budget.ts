/**
 * Spend brakes: a run's `maxCostUsd` and `maxTokens`. Once what its agent attempts consumed
 * reaches a limit, no new agent attempt starts and the run ends `failed` with BUDGET_EXCEEDED;
 * resuming it with a higher limit goes on from the task that was held back. The limits are
 * stored on the run (`config_json`), so a resume by the daemon keeps them.
 */
import { attempts, type Usage } from "../../db/index.ts";
import { SmithersError } from "../../errors/index.ts";

export type Budget = { maxCostUsd?: number; maxTokens?: number };

export const NO_USAGE: Usage = attempts.NO_USAGE;

/** Checks limits given as options: each a finite number >= 0 (0 lets no agent run). */
export function checkBudget(budget: { maxCostUsd?: unknown; maxTokens?: unknown }): Budget {
  const out: Budget = {};
  for (const field of ["maxCostUsd", "maxTokens"] as const) {
    const value = budget[field];
    if (value === undefined) continue;
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0 || (field === "maxTokens" && !Number.isInteger(value))) {
      const what = field === "maxTokens" ? "a whole number of tokens >= 0" : "a number of US dollars >= 0";
      throw new SmithersError("INVALID_OPTION", `${field} must be ${what}, got ${String(value)}`, { option: field });
    }
    out[field] = value;
  }
  return out;
}

/** The limits stored on a run (`config_json.budget`); none when absent or unreadable. */
export function storedBudget(configJson: string | null): Budget {
  if (!configJson) return {};
  try {
    const budget = (JSON.parse(configJson) as { budget?: unknown }).budget;
    return typeof budget === "object" && budget !== null ? checkBudget(budget) : {};
  } catch {
    return {};
  }
}

function readConfig(configJson: string | null): Record<string, unknown> {
  try {
    const parsed: unknown = configJson ? JSON.parse(configJson) : {};
    if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // unreadable: replaced
  }
  return {};
}

/** `config_json` holding the limits (merged into what the run stored before). */
export function withBudget(configJson: string | null, budget: Budget): string {
  return JSON.stringify({ ...readConfig(configJson), budget });
}

/**
 * `config_json` of a run that continues another (`<ContinueAsNew>`): the same limits, and what the
 * chain spent so far, which its own spend adds to (a chain does not start its budget afresh).
 */
export function withCarriedUsage(configJson: string | null, usage: Usage): string {
  return JSON.stringify({ ...readConfig(configJson), carriedUsage: usage });
}

/** What the runs before this one in its chain spent (zero for a run that continues none). */
export function carriedUsage(configJson: string | null): Usage {
  const carried = readConfig(configJson).carriedUsage as Partial<Usage> | undefined;
  if (typeof carried !== "object" || carried === null) return NO_USAGE;
  const n = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : 0);
  return {
    inputTokens: n(carried.inputTokens),
    cachedInputTokens: n(carried.cachedInputTokens),
    outputTokens: n(carried.outputTokens),
    costUsd: typeof carried.costUsd === "number" ? carried.costUsd : null,
  };
}

/** `after` minus `before`: what was spent between two readings of one run's totals. */
export function usageSince(before: Usage, after: Usage): Usage {
  return {
    inputTokens: after.inputTokens - before.inputTokens,
    cachedInputTokens: after.cachedInputTokens - before.cachedInputTokens,
    outputTokens: after.outputTokens - before.outputTokens,
    costUsd: after.costUsd === null ? null : after.costUsd - (before.costUsd ?? 0),
  };
}

/** What is left of `budget` after `spent`, plus `plus` (a child run's own earlier spend, which its totals include). */
export function remainingBudget(budget: Budget, spent: Usage, plus: Usage = NO_USAGE): Budget {
  const out: Budget = {};
  if (budget.maxCostUsd !== undefined) out.maxCostUsd = Math.max(0, budget.maxCostUsd - (spent.costUsd ?? 0)) + (plus.costUsd ?? 0);
  if (budget.maxTokens !== undefined)
    out.maxTokens = Math.max(0, budget.maxTokens - spent.inputTokens - spent.outputTokens) + plus.inputTokens + plus.outputTokens;
  return out;
}

/** Usage totals plus one attempt's usage. */
export function addToTotals(
  totals: Usage,
  usage: { inputTokens?: number | null; cachedInputTokens?: number | null; outputTokens?: number | null; costUsd?: number | null } | undefined,
): Usage {
  if (!usage) return totals;
  return {
    inputTokens: totals.inputTokens + (usage.inputTokens ?? 0),
    cachedInputTokens: totals.cachedInputTokens + (usage.cachedInputTokens ?? 0),
    outputTokens: totals.outputTokens + (usage.outputTokens ?? 0),
    costUsd: usage.costUsd === undefined || usage.costUsd === null ? totals.costUsd : (totals.costUsd ?? 0) + usage.costUsd,
  };
}

/**
 * Why no new agent attempt may start, or undefined. Tokens count input (cached included) plus
 * output. A cost limit with usage that has tokens but no price is refused as well (BUDGET_UNPRICED):
 * the limit could not be kept.
 */
export function budgetStop(runId: string, budget: Budget, totals: Usage, unpricedModel: string | undefined): SmithersError | undefined {
  if (budget.maxCostUsd === undefined && budget.maxTokens === undefined) return undefined; // no limits: nothing to compute per start
  const tokens = totals.inputTokens + totals.outputTokens;
  const details = { runId, ...budget, spentUsd: totals.costUsd ?? 0, spentTokens: tokens };
  if (budget.maxTokens !== undefined && tokens >= budget.maxTokens) {
    return new SmithersError(
      "BUDGET_EXCEEDED",
      `Run "${runId}" used ${tokens} tokens, reaching its limit of ${budget.maxTokens} (maxTokens): no further agent attempt starts; resume it with a higher limit to go on`,
      details,
    );
  }
  if (budget.maxCostUsd === undefined) return undefined;
  if (unpricedModel !== undefined) {
    return new SmithersError(
      "BUDGET_UNPRICED",
      `Run "${runId}" has a cost limit (maxCostUsd ${budget.maxCostUsd}) but an agent reported tokens without a cost for model "${unpricedModel}": give its price in the pricing option`,
      { ...details, model: unpricedModel },
    );
  }
  if ((totals.costUsd ?? 0) >= budget.maxCostUsd) {
    return new SmithersError(
      "BUDGET_EXCEEDED",
      `Run "${runId}" spent $${(totals.costUsd ?? 0).toFixed(4)}, reaching its limit of $${budget.maxCostUsd} (maxCostUsd): no further agent attempt starts; resume it with a higher limit to go on`,
      details,
    );
  }
  return undefined;
}
