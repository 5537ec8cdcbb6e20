/** @jsxImportSource ../../../src/jsx */
/** Soak: a task, a durable timer of a few seconds, another task. */
import { createSmithers } from "../../../src/index.ts";
import { z } from "zod";
import { RETRIES, RETRY_POLICY, soakInputSchema, work } from "./body.ts";

const { Workflow, Task, Sequence, Timer, smithers, outputs } = createSmithers({
  input: soakInputSchema,
  timer_step: z.object({ value: z.number().int(), attempt: z.number().int() }),
});

const retry = { retries: RETRIES, retryPolicy: RETRY_POLICY, maxAbandons: Infinity };

export default smithers((ctx) => (
  <Workflow name="soak-timer">
    <Sequence>
      <Task id="before" output={outputs.timer_step} {...retry}>
        {work(() => ctx.input.n)}
      </Task>
      <Timer id="pause" duration={ctx.input.wait} />
      <Task id="after" output={outputs.timer_step} {...retry}>
        {work(() => ctx.input.n + 1)}
      </Task>
    </Sequence>
  </Workflow>
));
