/** @jsxImportSource ../../../src/jsx */
/** Soak: a build, an approval the soak driver approves or denies at random, then a deploy (a denial fails the run unless onDeny is "continue"). */
import { approvalDecisionSchema, createSmithers } from "../../../src/index.ts";
import { z } from "zod";
import { RETRIES, RETRY_POLICY, soakInputSchema, work } from "./body.ts";

const { Workflow, Task, Sequence, Approval, smithers, outputs } = createSmithers({
  input: soakInputSchema,
  approval_step: z.object({ value: z.number().int(), attempt: z.number().int() }),
  approval_decision: approvalDecisionSchema,
});

const retry = { retries: RETRIES, retryPolicy: RETRY_POLICY, maxAbandons: Infinity };

export default smithers((ctx) => (
  <Workflow name="soak-approval">
    <Sequence>
      <Task id="build" output={outputs.approval_step} {...retry}>
        {work(() => ctx.input.n)}
      </Task>
      <Approval id="gate" output={outputs.approval_decision} request={{ title: `Ship soak run ${ctx.input.n}?` }} onDeny={ctx.input.onDeny} />
      <Task id="deploy" output={outputs.approval_step} {...retry}>
        {work(() => (ctx.outputMaybe<{ approved: boolean }>(outputs.approval_decision, { nodeId: "gate" })?.approved ? 1 : 0))}
      </Task>
    </Sequence>
  </Workflow>
));
