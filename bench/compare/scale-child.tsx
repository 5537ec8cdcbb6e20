/** @jsxImportSource ../../src/jsx */
/**
 * One process of bench/compare's `scale` rows (scale.ts) on OUR engine: a run of N tasks whose
 * first N-1 finish and whose last one is left to a resume. argv[2] is a JSON ScaleSpec.
 *
 * - `build`: a Sequence of N-1 static tasks and a last compute task that throws (no retry), so
 *   the run ends `failed` with N-1 tasks finished. Prints nothing.
 * - `resume`: the same workflow, the last task now succeeding, resumed in this fresh process;
 *   the last stdout line is `BENCH_RESULT {json}` with the resume call's wall time and the
 *   process's peak RSS.
 */
import { createSmithers, runWorkflow } from "../../src/index.ts";
import { z } from "../zod.ts";
import { peakRssKb, report } from "./protocol.ts";

export type ScaleSpec = { step: "build" | "resume"; n: number; dbPath: string };
export const SCALE_RUN_ID = "bench-scale-resume";

const spec = JSON.parse(process.argv[2] ?? "{}") as ScaleSpec;
if ((spec.step !== "build" && spec.step !== "resume") || !(spec.n >= 2) || typeof spec.dbPath !== "string") {
  throw new Error(`usage: scale-child.tsx '{"step":"build"|"resume","n":N,"dbPath":PATH}', got ${process.argv[2]}`);
}
const last = spec.n - 1;
const failLast = spec.step === "build";
const { Workflow, Task, Sequence, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath: spec.dbPath });
const ids = Array.from({ length: last }, (_, i) => i);
const wf = smithers(() => (
  <Workflow name="scale-resume">
    <Sequence>
      {ids.map((i) => (
        <Task key={i} id={`t${i}`} output={outputs.out}>
          {{ n: i }}
        </Task>
      ))}
      <Task id={`t${last}`} output={outputs.out} noRetry>
        {() => {
          if (failLast) throw new Error("the last task fails in the build run");
          return { n: last };
        }}
      </Task>
    </Sequence>
  </Workflow>
));

if (spec.step === "build") {
  const result = await runWorkflow(wf, { runId: SCALE_RUN_ID, input: {} });
  if (result.status !== "failed") throw new Error(`the build run ended ${result.status}, expected failed`);
} else {
  let started = 0;
  const t0 = performance.now();
  const result = await runWorkflow(wf, { runId: SCALE_RUN_ID, resume: true, onEvent: (e) => void (e.type === "NodeStarted" && started++) });
  const wallMs = performance.now() - t0;
  if (result.status !== "finished") throw new Error(`the resume ended ${result.status}: ${result.error?.message ?? ""}`);
  if (started !== 1) throw new Error(`the resume started ${started} tasks, expected 1`);
  report({ wallMs, peakRssKb: peakRssKb() });
}
