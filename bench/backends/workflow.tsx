/** @jsxImportSource ../../src/jsx */
/** bench/backends: seq-N or par-N (the input says which), the shapes of bench/compare, run by `smithers worker` processes. */
import { createSmithers } from "../../src/index.ts";
import { z } from "../zod.ts";

const { Workflow, Task, Sequence, Parallel, smithers, outputs } = createSmithers({
  input: z.object({ shape: z.enum(["seq", "par"]), n: z.number().int().positive() }),
  out: z.object({ n: z.number() }),
});

export default smithers((ctx) => {
  const tasks = Array.from({ length: ctx.input.n }, (_, i) => (
    <Task key={i} id={`t${i}`} output={outputs.out}>
      {{ n: i }}
    </Task>
  ));
  return <Workflow name="backends">{ctx.input.shape === "seq" ? <Sequence>{tasks}</Sequence> : <Parallel maxConcurrency={8}>{tasks}</Parallel>}</Workflow>;
});
