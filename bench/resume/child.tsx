/** @jsxImportSource ../../src/jsx */
/**
 * One process of bench/resume (spawned by index.tsx, so every measurement starts cold):
 *
 *   bun run bench/resume/child.tsx build  <dbPath> <n>   # n tasks finish, task n+1 fails: run ends failed
 *   bun run bench/resume/child.tsx resume <dbPath> <n>   # resumes it; prints one JSON line of timings
 *
 * The workflow is a Sequence of n+1 static compute tasks; the last one throws while
 * BENCH_RESUME_FAIL=1, so the build run ends `failed` with exactly n tasks finished.
 */
const importStart = performance.now();
const { z } = await import("../zod.ts"); // our engine's zod, not the peer's copy in bench/node_modules
const { createSmithers, runWorkflow } = await import("../../src/index.ts");
const importMs = performance.now() - importStart;

const RUN_ID = "bench-resume";

const [mode, dbPath, nText] = process.argv.slice(2);
if ((mode !== "build" && mode !== "resume") || !dbPath || !nText) throw new Error("usage: child.tsx build|resume <dbPath> <n>");
const n = Number(nText);

const { Workflow, Task, Sequence, smithers, outputs } = createSmithers({ step: z.object({ n: z.number().int() }) }, { dbPath });
const ids = Array.from({ length: n + 1 }, (_, i) => i);
const wf = smithers(() => (
  <Workflow name="bench-resume">
    <Sequence>
      {ids.map((i) => (
        <Task key={i} id={`t${i}`} output={outputs.step}>
          {() => {
            if (i === n && process.env.BENCH_RESUME_FAIL === "1") throw new Error("the last task fails on the first run");
            return { n: i };
          }}
        </Task>
      ))}
    </Sequence>
  </Workflow>
));

if (mode === "build") {
  const started = performance.now();
  const result = await runWorkflow(wf, { runId: RUN_ID });
  console.log(JSON.stringify({ status: result.status, ms: performance.now() - started }));
} else {
  let resumedAtMs: number | undefined; // event timestamps: when the engine emitted them (Date.now())
  let firstStartAtMs: number | undefined;
  let resumedHeardMs: number | undefined; // performance.now() when the listener heard them (after commit)
  let firstStartHeardMs: number | undefined;
  let startedNodes = 0;
  const callWallMs = Date.now();
  const callStart = performance.now();
  const result = await runWorkflow(wf, {
    runId: RUN_ID,
    resume: true,
    onEvent: (event) => {
      if (event.type === "RunResumed") {
        resumedAtMs = event.timestampMs;
        resumedHeardMs = performance.now();
      } else if (event.type === "NodeStarted") {
        startedNodes++;
        if (firstStartAtMs === undefined) {
          firstStartAtMs = event.timestampMs;
          firstStartHeardMs = performance.now();
        }
      }
    },
  });
  const callMs = performance.now() - callStart;
  if (result.status !== "finished") throw new Error(`resume ended ${result.status}: ${result.error?.message}`);
  console.log(
    JSON.stringify({
      status: result.status,
      startedNodes,
      processToCallMs: callStart, // ms since the process started (performance.now's origin)
      importMs,
      callMs,
      setupMs: resumedAtMs === undefined ? undefined : resumedAtMs - callWallMs,
      toFirstStartEmittedMs: firstStartAtMs === undefined ? undefined : firstStartAtMs - callWallMs,
      toFirstStartHeardMs: firstStartHeardMs === undefined ? undefined : firstStartHeardMs - callStart,
      resumedHeardMs: resumedHeardMs === undefined ? undefined : resumedHeardMs - callStart,
      maxRssKb: process.resourceUsage().maxRSS,
    }),
  );
}
