/** @jsxImportSource ../src/jsx */
/** The workflow most benches time: a Sequence (or Parallel) of `n` compute tasks, each writing one small row. */
import type { createSmithers } from "../src/index.ts";

type Kit = Pick<
  ReturnType<typeof createSmithers<{ step: import("zod").ZodObject<{ n: import("zod").ZodNumber }> }>>,
  "Workflow" | "Task" | "Sequence" | "Parallel" | "smithers" | "outputs"
>;

export function sequenceWorkflow(kit: Kit, n: number, name: string, group: "sequence" | "parallel" = "sequence") {
  const { Workflow, Task, Sequence, Parallel, smithers, outputs } = kit;
  const Group = group === "sequence" ? Sequence : Parallel;
  const ids = Array.from({ length: n }, (_, i) => i);
  return smithers(() => (
    <Workflow name={name}>
      <Group>
        {ids.map((i) => (
          <Task key={i} id={`t${i}`} output={outputs.step}>
            {() => ({ n: i })}
          </Task>
        ))}
      </Group>
    </Workflow>
  ));
}
