/** @jsxImportSource ../../../src/jsx */
/** Soak: a sequence, a parallel group, a three-round loop and a last task; every body may fail and is retried. */
import { createSmithers } from "../../../src/index.ts";
import { z } from "zod";
import { RETRIES, RETRY_POLICY, soakInputSchema, work } from "./body.ts";

const { Workflow, Task, Sequence, Parallel, Loop, smithers, outputs } = createSmithers({
  input: soakInputSchema,
  pipeline_step: z.object({ value: z.number().int(), attempt: z.number().int() }),
});

const ROUNDS = 3;
const retry = { retries: RETRIES, retryPolicy: RETRY_POLICY, maxAbandons: Infinity };

export default smithers((ctx) => {
  const rounds = ctx.iterationCount(outputs.pipeline_step, "refine");
  const value = (nodeId: string) => ctx.outputMaybe<{ value: number }>(outputs.pipeline_step, { nodeId })?.value ?? 0;
  return (
    <Workflow name="soak-pipeline">
      <Sequence>
        <Task id="fetch" output={outputs.pipeline_step} {...retry}>
          {work(() => ctx.input.n)}
        </Task>
        <Parallel>
          {["a", "b", "c"].map((id, i) => (
            <Task key={id} id={id} output={outputs.pipeline_step} {...retry}>
              {work(() => value("fetch") + i)}
            </Task>
          ))}
        </Parallel>
        <Loop id="rounds" until={rounds >= ROUNDS} maxIterations={ROUNDS + 1} onMaxReached="fail">
          <Task id="refine" output={outputs.pipeline_step} {...retry}>
            {work(() => rounds)}
          </Task>
        </Loop>
        <Task id="ship" output={outputs.pipeline_step} {...retry}>
          {work(() => value("a") + value("b") + value("c"))}
        </Task>
      </Sequence>
    </Workflow>
  );
});
