/** @jsxImportSource ../../src/jsx */
/** bench/server's workflow: `TASKS` static tasks in a row, so a run journals a few hundred events quickly. */
import { createSmithers } from "../../src/index.ts";
import { z } from "zod";

const TASKS = 100;
const { smithers, Workflow, Task, Sequence, outputs } = createSmithers({ step: z.object({ n: z.number() }) });

export default smithers(() => (
  <Workflow name="bench-server">
    <Sequence>
      {Array.from({ length: TASKS }, (_, n) => (
        <Task key={n} id={`t${n}`} output={outputs.step}>
          {{ n }}
        </Task>
      ))}
    </Sequence>
  </Workflow>
));
