/** llmJudge: a scorer that asks one of our agents (or a list, in fallback order) for `{ score, reason }`. */
import { z } from "zod";
import { generateStructured, type Agent } from "../agents/index.ts";
import { SmithersError } from "../errors/index.ts";
import { createScorer } from "./builtins.ts";
import type { Scorer, ScorerInput } from "./types.ts";

/**
 * The peer's names (`judge`, `instructions`, `promptTemplate`); `agent` and `rubric` are accepted
 * for `judge` and `instructions`. Without a template the prompt shows the input, output and ground truth as JSON.
 */
export type LlmJudgeConfig = {
  id?: string;
  name?: string;
  description?: string;
  judge?: Agent | readonly Agent[];
  agent?: Agent | readonly Agent[];
  instructions?: string;
  rubric?: string;
  promptTemplate?: (input: ScorerInput) => string;
};

/** The judge's reply; built on the first judging, not at import (zod objects cost every process that imports the package). */
let verdict: ReturnType<typeof verdictSchema> | undefined;
const verdictSchema = () => z.object({ score: z.number().min(0).max(1), reason: z.string() });

function defaultTemplate({ input, output, groundTruth }: ScorerInput): string {
  const parts = [`Input: ${JSON.stringify(input)}`, `Output: ${JSON.stringify(output)}`];
  if (groundTruth !== undefined) parts.push(`Expected: ${JSON.stringify(groundTruth)}`);
  return parts.join("\n");
}

/**
 * A scorer whose judge is an agent: it gets the instructions and the template's text, and must
 * reply with JSON `{ score, reason }` (score 0..1; an invalid reply gets the agents' correction
 * calls). The judge's tokens and cost go into the row's meta.
 * @example
 * llmJudge({ id: "quality", name: "Quality", description: "Is the summary faithful?", judge: claude, instructions: "Score 0..1 for faithfulness." })
 */
export function llmJudge(config: LlmJudgeConfig): Scorer {
  const judge = config?.judge ?? config?.agent;
  const instructions = config?.instructions ?? config?.rubric;
  const judges = judge === undefined ? [] : Array.isArray(judge) ? judge : [judge];
  if (judges.length === 0 || judges.some((a) => typeof (a as Agent)?.generate !== "function"))
    throw new SmithersError("INVALID_SCORER", "llmJudge needs a judge agent (`judge` or `agent`) with a generate method");
  if (typeof instructions !== "string" || instructions.trim() === "")
    throw new SmithersError("INVALID_SCORER", "llmJudge needs its `instructions` (or `rubric`): what the judge scores and how");
  const template = config.promptTemplate ?? defaultTemplate;
  if (typeof template !== "function") throw new SmithersError("INVALID_SCORER", "llmJudge promptTemplate must be a function of the scorer input");
  return createScorer({
    id: config.id ?? "llm-judge",
    name: config.name ?? "LLM judge",
    description: config.description ?? instructions,
    score: async (input) => {
      const prompt = `${instructions}\n\n${template(input)}\n\nReply with JSON {"score": number from 0 to 1, "reason": string}.`;
      const result = await generateStructured({
        agent: judges,
        prompt,
        schema: (verdict ??= verdictSchema()),
        ...(input.signal ? { signal: input.signal } : {}),
      });
      const usage = result.usage;
      const judgeAgent = judges[result.agentIndex];
      return {
        score: result.value.score,
        reason: result.value.reason,
        meta: {
          judge: judgeAgent?.id ?? null,
          calls: result.attempts.length,
          inputTokens: usage?.inputTokens ?? null,
          outputTokens: usage?.outputTokens ?? null,
          costUsd: usage?.costUsd ?? null,
          model: usage?.model ?? null,
        },
      };
    },
  });
}
