/** @jsxImportSource smithers-orchestrator */
/**
 * One measured run of the PEER engine (npm smithers-orchestrator, installed in bench/node_modules),
 * in its own process (started by bench/compare/index.ts). argv[2] is a JSON RunSpec; the last
 * stdout line is `BENCH_RESULT {json}`. The same workflows as ours.tsx: keep the two in step.
 *
 * Plain .jsx on purpose: the root tsconfig type-checks bench/*.ts(x), and this file's imports only
 * exist after `npm install --prefix bench`, so `npm run typecheck` must not depend on them.
 */
import { closeSingleRunnerRuntime, createSmithers, runWorkflow } from "smithers-orchestrator";
import { Effect } from "effect";
import { z } from "zod";
import { parseSpec, peakRssKb, report } from "./protocol.ts";

const spec = parseSpec(process.argv[2]);
const { Workflow, Task, Sequence, Parallel, Loop, smithers, outputs } = createSmithers(
  { out: z.object({ n: z.number() }) },
  { dbPath: spec.dbPath },
);
const ids = Array.from({ length: spec.n }, (_, i) => i);

const workflows = {
  one: () => smithers(() => (
    <Workflow name="one">
      <Task id="t0" output={outputs.out}>{{ n: 0 }}</Task>
    </Workflow>
  )),
  seq: () => smithers(() => (
    <Workflow name="seq">
      <Sequence>
        {ids.map((i) => <Task key={i} id={`t${i}`} output={outputs.out}>{{ n: i }}</Task>)}
      </Sequence>
    </Workflow>
  )),
  par: () => smithers(() => (
    <Workflow name="par">
      <Parallel maxConcurrency={8}>
        {ids.map((i) => <Task key={i} id={`t${i}`} output={outputs.out}>{{ n: i }}</Task>)}
      </Parallel>
    </Workflow>
  )),
  loop: () => smithers((ctx) => (
    <Workflow name="loop">
      <Loop id="l" until={ctx.iterationCount(outputs.out, "t") >= spec.n} maxIterations={spec.n}>
        <Task id="t" output={outputs.out}>{{ n: ctx.iterationCount(outputs.out, "t") }}</Task>
      </Loop>
    </Workflow>
  )),
};

const wf = workflows[spec.shape]();
const started = performance.now();
const result = await Effect.runPromise(runWorkflow(wf, { input: {} }));
const wallMs = performance.now() - started;
// The peer keeps an in-process runtime (timers) alive after a run; closing it lets the process exit.
await closeSingleRunnerRuntime();
if (result.status !== "finished") {
  console.error(`peer ${spec.shape}-${spec.n}: run ${result.status}: ${JSON.stringify(result.error ?? null)}`);
  process.exit(1);
}
report({ wallMs, peakRssKb: peakRssKb() });
