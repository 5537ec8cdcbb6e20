/** @jsxImportSource smithers-workflows */
/**
 * Triage of an issue's text by rules, no model: count its words, then label it bug, feature or
 * question. Its eval cases are in triage.cases.jsonl:
 *   npx smithers eval examples/triage.tsx --cases examples/triage.cases.jsonl
 */
import { createSmithers } from "smithers-workflows";
import { z } from "zod";

const { Workflow, Task, smithers, outputs } = createSmithers({
  input: z.object({ text: z.string() }),
  stats: z.object({ words: z.number().int() }),
  triage: z.object({ label: z.enum(["bug", "feature", "question"]), words: z.number().int() }),
});

type Label = "bug" | "feature" | "question";

const RULES: [RegExp, Label][] = [
  [/\b(crash(es|ed)?|errors?|broken|fails?|exceptions?)\b/i, "bug"],
  [/\b(add|support|allow|would like)\b/i, "feature"],
];

export default smithers((ctx) => (
  <Workflow name="triage">
    <Task id="stats" output={outputs.stats} noRetry>
      {() => {
        const words = ctx.input.text.split(/\s+/).filter(Boolean).length;
        if (words === 0) throw new Error("nothing to triage: the text is empty");
        return { words };
      }}
    </Task>
    <Task id="label" output={outputs.triage}>
      {() => {
        const label: Label = RULES.find(([rule]) => rule.test(ctx.input.text))?.[1] ?? "question";
        const stats = ctx.outputMaybe<{ words: number }>(outputs.stats, { nodeId: "stats" });
        return { label, words: stats?.words ?? 0 };
      }}
    </Task>
  </Workflow>
));
