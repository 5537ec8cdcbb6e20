/**
 * What one attempt's agent calls consumed. A call's reply (or its error's details) says what it
 * used; a call that never returns (a timeout, a cancel, a crash of the CLI) still counts what its
 * `usage` events reported so far, so a limit cannot be passed by failing.
 */
import { addUsage, priceUsage, type AgentEvent, type AgentUsage, type ModelPricing } from "../../agents/index.ts";
import type { Usage } from "../../db/index.ts";

export class SpendMeter {
  usage: AgentUsage | undefined;
  /** A model an agent reported tokens for without a cost (and no price): a cost limit cannot count them. */
  unpricedModel: string | undefined;
  /** The call in flight's usage so far, from its `usage` events (cumulative within a call). */
  private inCall: AgentUsage | undefined;

  constructor(private readonly pricing: ModelPricing | undefined) {}

  /** A call began: anything left from an earlier one that never ended is counted now. */
  callStarted(): void {
    this.finish();
  }

  event(event: AgentEvent): void {
    if (event.type === "usage") this.inCall = event.usage;
  }

  /** A call ended; `reported` is its reply's (or error's) usage, which replaces what its events said. */
  callEnded(reported: AgentUsage | undefined): void {
    const usage = reported ?? priceUsage(this.inCall, this.pricing);
    this.inCall = undefined;
    this.add(usage);
  }

  /** The attempt is over: a call that never ended counts what it reported. */
  finish(): void {
    if (this.inCall) this.add(priceUsage(this.inCall, this.pricing));
    this.inCall = undefined;
  }

  private add(usage: AgentUsage | undefined): void {
    if (!usage) return;
    this.usage = addUsage(this.usage, usage);
    if (usage.costUsd === undefined && (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0) > 0) {
      // With tokens by model, the one to name is a model that has no price, not necessarily the one that answered.
      const missing = Object.keys(usage.models ?? {}).find((model) => this.pricing?.[model] === undefined);
      this.unpricedModel ??= missing ?? usage.model ?? "(unknown model)";
    }
  }
}

/** A child run's spend as one call's usage (tokens; the cost when the child knew it). */
export function childSpend(u: Usage): AgentUsage | undefined {
  if (u.inputTokens + u.outputTokens + u.cachedInputTokens === 0 && u.costUsd === null) return undefined;
  return {
    inputTokens: u.inputTokens,
    cachedInputTokens: u.cachedInputTokens,
    outputTokens: u.outputTokens,
    ...(u.costUsd === null ? {} : { costUsd: u.costUsd }),
  };
}

/** The attempt row's usage columns (integers: SQLite stores token counts exactly). */
export function usageColumns(usage: AgentUsage | undefined) {
  if (!usage) return {};
  const int = (n: number | undefined) => (n === undefined ? null : Math.round(n));
  return {
    inputTokens: int(usage.inputTokens),
    cachedInputTokens: int(usage.cachedInputTokens),
    outputTokens: int(usage.outputTokens),
    costUsd: usage.costUsd ?? null,
    agentModel: usage.model ?? null,
  };
}
