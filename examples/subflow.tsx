/** @jsxImportSource smithers-workflows */
/**
 * A parent that runs a child workflow per step with <Subflow>: the child counts the words of a
 * text; its declared result becomes the parent's `counted` row, which the parent then reports.
 *   npx smithers up examples/subflow.tsx --input '{"text":"durable runs wait for the world"}'
 * The child run is stored beside the parent: SELECT run_id, parent_run_id FROM _smithers_runs.
 */
import { createSmithers, Subflow } from "smithers-workflows";
import { z } from "zod";

const child = createSmithers({
  input: z.object({ text: z.string() }),
  normalized: z.object({ text: z.string() }),
  count: z.object({ words: z.number().int() }),
});

const countWords = child.smithers(
  (ctx) => {
    const normalized = ctx.outputMaybe<{ text: string }>(child.outputs.normalized, { nodeId: "normalize" });
    return (
      <child.Workflow name="count-words">
        <child.Task id="normalize" output={child.outputs.normalized}>
          {{ text: ctx.input.text.trim().replace(/\s+/g, " ") }}
        </child.Task>
        <child.Task id="count" output={child.outputs.count}>
          {{ words: normalized ? normalized.text.split(" ").length : 0 }}
        </child.Task>
      </child.Workflow>
    );
  },
  { output: child.outputs.count },
);

const { Workflow, Task, smithers, outputs } = createSmithers({
  input: z.object({ text: z.string() }),
  counted: z.object({ words: z.number().int() }),
  report: z.object({ line: z.string() }),
});

export default smithers((ctx) => {
  const counted = ctx.outputMaybe<{ words: number }>(outputs.counted, { nodeId: "count-words" });
  return (
    <Workflow name="subflow-example">
      <Subflow id="count-words" workflow={countWords} input={{ text: ctx.input.text }} output={outputs.counted} />
      <Task id="report" output={outputs.report}>
        {{ line: `The text has ${counted?.words ?? "?"} words` }}
      </Task>
    </Workflow>
  );
});
