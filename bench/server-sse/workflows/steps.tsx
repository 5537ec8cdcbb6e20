/** @jsxImportSource ../../../src/jsx */
/** Six tasks in a row, each sleeping `delayMs` (input) before it returns its index (the runs bench/server-sse times). */
import { z } from "zod";
import { createSmithers } from "../../../src/index.ts";

const { smithers, Workflow, Task, Sequence, outputs } = createSmithers({
  input: z.object({ delayMs: z.number().int().nonnegative().default(0) }),
  step: z.object({ n: z.number() }),
});

export default smithers((ctx) => (
  <Workflow name="server-steps">
    <Sequence>
      {[0, 1, 2, 3, 4, 5].map((n) => (
        <Task key={n} id={`step-${n}`} output={outputs.step}>
          {async () => {
            await Bun.sleep(ctx.input.delayMs);
            return { n };
          }}
        </Task>
      ))}
    </Sequence>
  </Workflow>
));
