/** @jsxImportSource ../../src/jsx */
/** bench/signal-latency's workflow: wait for "go", then a task stamps when it ran. */
import { createSmithers } from "../../src/index.ts";
import { z } from "zod";

const { Workflow, Task, WaitForEvent, smithers, outputs } = createSmithers({
  go: z.object({ sentAtMs: z.number() }),
  after: z.object({ ranAtMs: z.number() }),
});

export default smithers(() => (
  <Workflow name="signal-latency">
    <WaitForEvent id="go" event="go" output={outputs.go} />
    <Task id="after" output={outputs.after}>
      {() => ({ ranAtMs: Date.now() })}
    </Task>
  </Workflow>
));
