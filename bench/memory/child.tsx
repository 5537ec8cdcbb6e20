/** @jsxImportSource ../../src/jsx */
/**
 * One process of bench/memory (spawned by index.tsx, so each shape starts from a fresh heap):
 *
 *   bun run bench/memory/child.tsx loop|seq <dbPath> <n> <every>
 *
 * `loop`: a <Loop> of n iterations, each a Sequence of two compute tasks (`b` reads `a`'s row of
 * the same iteration through ctx). `seq`: a <Sequence> of n compute tasks. Every `every` units
 * (loop iterations or sequence tasks) it runs a full GC and samples RSS and heapUsed; the last
 * stdout line is one JSON object with the samples.
 */
const { z } = await import("../zod.ts"); // our engine's zod, not the peer's copy in bench/node_modules
const { createSmithers, runWorkflow } = await import("../../src/index.ts");

const [shape, dbPath, nText, everyText] = process.argv.slice(2);
if ((shape !== "loop" && shape !== "seq") || !dbPath || !nText || !everyText) throw new Error("usage: child.tsx loop|seq <dbPath> <n> <every>");
const n = Number(nText);
const every = Number(everyText);

const { Workflow, Task, Sequence, Loop, smithers, outputs } = createSmithers({ step: z.object({ n: z.number().int() }) }, { dbPath });

const wf =
  shape === "loop"
    ? smithers((ctx) => (
        <Workflow name="bench-memory-loop">
          <Loop id="l" until={ctx.iterationCount(outputs.step, "b") >= n} maxIterations={n}>
            <Sequence>
              <Task id="a" output={outputs.step}>
                {() => ({ n: ctx.iteration })}
              </Task>
              <Task id="b" output={outputs.step}>
                {() => ({ n: (ctx.outputMaybe<{ n: number }>(outputs.step, { nodeId: "a" })?.n ?? -1) + 1 })}
              </Task>
            </Sequence>
          </Loop>
        </Workflow>
      ))
    : smithers(() => (
        <Workflow name="bench-memory-seq">
          <Sequence>
            {Array.from({ length: n }, (_, i) => (
              <Task key={i} id={`t${i}`} output={outputs.step}>
                {() => ({ n: i })}
              </Task>
            ))}
          </Sequence>
        </Workflow>
      ));

type Sample = { units: number; tasks: number; rss: number; heapUsed: number; ms: number };
const samples: Sample[] = [];
const started = performance.now();
let tasks = 0;
let units = 0;
const sample = () => {
  Bun.gc(true);
  const m = process.memoryUsage();
  samples.push({ units, tasks, rss: m.rss, heapUsed: m.heapUsed, ms: performance.now() - started });
};
sample();
const result = await runWorkflow(wf, {
  input: {},
  onEvent: (event) => {
    if (event.type !== "NodeFinished") return;
    tasks++;
    // A loop's unit is an iteration: it ends when its second task (`b`) finishes.
    if (shape === "seq" || (event as { nodeId?: string }).nodeId === "b") {
      units++;
      // The last unit finishes inside the run's final transaction (its frame and events still
      // held): it is sampled once runWorkflow has returned instead.
      if (units % every === 0 && units < n) sample();
    }
  },
});
const wallMs = performance.now() - started;
sample();
if (result.status !== "finished") throw new Error(`bench/memory ${shape}: run ${result.status}: ${result.error?.message}`);
const hwm = /^VmHWM:\s+(\d+) kB$/m.exec(
  await Bun.file("/proc/self/status")
    .text()
    .catch(() => ""),
);
console.log(JSON.stringify({ shape, n, tasks, wallMs, peakRssKb: hwm ? Number(hwm[1]) : process.resourceUsage().maxRSS, samples }));
