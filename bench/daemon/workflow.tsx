/** @jsxImportSource ../../src/jsx */
/** bench/daemon's workflow: `before`, a wait (an Approval, a Timer of 200 ms or a `go` signal, by input), then `after`. */
import { approvalDecisionSchema, createSmithers } from "../../src/index.ts";
import { z } from "zod";

const { Workflow, Task, Approval, Timer, WaitForEvent, smithers, outputs } = createSmithers({
  input: z.object({ wait: z.enum(["approval", "timer", "signal"]) }),
  step: z.object({ at: z.number() }),
  approval: approvalDecisionSchema,
  go: z.object({ n: z.number() }),
});

export default smithers((ctx) => (
  <Workflow name="daemon-bench">
    <Task id="before" output={outputs.step}>
      {() => ({ at: Date.now() })}
    </Task>
    {ctx.input.wait === "approval" ? <Approval id="wait" output={outputs.approval} request={{ title: "go on?" }} /> : null}
    {ctx.input.wait === "timer" ? <Timer id="wait" duration="200ms" /> : null}
    {ctx.input.wait === "signal" ? <WaitForEvent id="wait" event="go" output={outputs.go} /> : null}
    <Task id="after" output={outputs.step}>
      {() => ({ at: Date.now() })}
    </Task>
  </Workflow>
));
