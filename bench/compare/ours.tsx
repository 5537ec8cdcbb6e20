/** @jsxImportSource ../../src/jsx */
/**
 * One measured run of OUR engine, in its own process (started by bench/compare/index.ts).
 * argv[2] is a JSON RunSpec; the last stdout line is `BENCH_RESULT {json}`.
 * The same workflows as peer.jsx: keep the two files in step.
 */
import { createSmithers, runWorkflow } from "../../src/index.ts";
// Not a bare "zod": that would find the peer's copy in bench/node_modules (see bench/zod.ts).
import { z } from "../zod.ts";
import { shapeWorkflow } from "../shape-workflows.tsx";
import { parseSpec, peakRssKb, report, type Shape } from "./protocol.ts";

const spec = parseSpec(process.argv[2]);
/** The workflow of `shape` on a database of its own. */
function workflowOn(shape: Shape, dbPath: string) {
  const kit = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
  return { wf: shapeWorkflow(kit, shape, spec.n), smithersDb: kit.smithersDb };
}

if (spec.warm) {
  // The same workflow once, untimed, on a scratch database: the timed run below then finds the
  // engine's code compiled, as every run after the first of a long-lived process (a worker, a server) does.
  const first = await runWorkflow(workflowOn(spec.shape, `${spec.dbPath}.warm.db`).wf, { input: {} });
  if (first.status !== "finished") throw new Error(`warm-up run ${first.status}`);
}
const { wf, smithersDb } = workflowOn(spec.shape, spec.dbPath);
// The peer opens (and creates) its database inside createSmithers, before its timer starts;
// ours opens lazily in runWorkflow, so open it here to time the same thing on both sides.
void smithersDb;
const counting = spec.count ? (await import("../statement-counter.ts")).startCounting() : undefined;
const started = performance.now();
const result = await runWorkflow(wf, { input: {} });
const wallMs = performance.now() - started;
counting?.stop();
if (result.status !== "finished") {
  console.error(`ours ${spec.shape}-${spec.n}: run ${result.status}: ${result.error?.message ?? "(no error)"}`);
  process.exit(1);
}
report({ wallMs, peakRssKb: peakRssKb(), ...(counting ? { statements: counting.counted.total } : {}) });
