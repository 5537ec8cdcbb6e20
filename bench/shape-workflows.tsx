/** @jsxImportSource ../src/jsx */
/**
 * The four shapes bench/compare and bench/cold time (one task; seq, par and loop of `n`), each
 * task writing one small static row. The kit comes from the caller's createSmithers, so a bench
 * that wraps the engine's prototypes before loading it (bench/cold) can import this afterwards.
 * bench/compare/peer.jsx holds the same workflows for the peer: keep them in step.
 */
import type { createSmithers } from "../src/index.ts";
import type { Shape } from "./compare/protocol.ts";

type Kit = Pick<
  ReturnType<typeof createSmithers<{ out: import("zod").ZodObject<{ n: import("zod").ZodNumber }> }>>,
  "Workflow" | "Task" | "Sequence" | "Parallel" | "Loop" | "smithers" | "outputs"
>;

export function shapeWorkflow(kit: Kit, shape: Shape, n: number) {
  const { Workflow, Task, Sequence, Parallel, Loop, smithers, outputs } = kit;
  // seq and par hold the same tasks; only their container differs.
  const tasks = () =>
    Array.from({ length: n }, (_, i) => (
      <Task key={i} id={`t${i}`} output={outputs.out}>
        {{ n: i }}
      </Task>
    ));
  switch (shape) {
    case "one":
      return smithers(() => (
        <Workflow name="one">
          <Task id="t0" output={outputs.out}>
            {{ n: 0 }}
          </Task>
        </Workflow>
      ));
    case "seq":
      return smithers(() => (
        <Workflow name="seq">
          <Sequence>{tasks()}</Sequence>
        </Workflow>
      ));
    case "par":
      return smithers(() => (
        <Workflow name="par">
          <Parallel maxConcurrency={8}>{tasks()}</Parallel>
        </Workflow>
      ));
    case "loop":
      return smithers((ctx) => (
        <Workflow name="loop">
          <Loop id="l" until={ctx.iterationCount(outputs.out, "t") >= n} maxIterations={n}>
            <Task id="t" output={outputs.out}>
              {{ n: ctx.iterationCount(outputs.out, "t") }}
            </Task>
          </Loop>
        </Workflow>
      ));
  }
}
