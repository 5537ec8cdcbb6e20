/** @jsxImportSource ../../../src/jsx */
/** Soak: a task, a wait for the `soak.go` signal (which the soak driver sends at a random time, maybe before the wait starts), a task that uses it. */
import { createSmithers } from "../../../src/index.ts";
import { z } from "zod";
import { RETRIES, RETRY_POLICY, soakInputSchema, work } from "./body.ts";

const { Workflow, Task, Sequence, WaitForEvent, smithers, outputs } = createSmithers({
  input: soakInputSchema,
  signal_step: z.object({ value: z.number().int(), attempt: z.number().int() }),
  signal_payload: z.object({ k: z.number().int() }),
});

const retry = { retries: RETRIES, retryPolicy: RETRY_POLICY, maxAbandons: Infinity };

export default smithers((ctx) => (
  <Workflow name="soak-signal">
    <Sequence>
      <Task id="before" output={outputs.signal_step} {...retry}>
        {work(() => ctx.input.n)}
      </Task>
      <WaitForEvent id="go" event="soak.go" output={outputs.signal_payload} />
      <Task id="after" output={outputs.signal_step} {...retry}>
        {work(() => ctx.outputMaybe<{ k: number }>(outputs.signal_payload, { nodeId: "go" })?.k ?? -1)}
      </Task>
    </Sequence>
  </Workflow>
));
