/**
 * Runs the benchmarks and prints their tables. Numbers are printed, never asserted.
 *
 *   bun run bench                      # db, durability, engine, frames, resume, memory, daemon, signal-latency, server, server-sse, metrics, backends, fork, pg-faults, agent-clis, queue, vectors and compare (compare installs the peer into bench/ if missing)
 *   bun run bench compare --quick      # one bench; the flags after its name go to it
 *   bun run bench --quick              # all benches; flags go to compare
 */
import { runCompareBench } from "./compare/index.ts";
import { runDbBench } from "./db/index.ts";
import { runDurabilityBench } from "./durability/index.tsx";
import { runEngineBench } from "./engine/index.tsx";
import { runFramesBench } from "./frames/index.tsx";
import { runMemoryBench } from "./memory/index.tsx";
import { runDaemonBench } from "./daemon/index.ts";
import { runSignalLatencyBench } from "./signal-latency/index.ts";
import { runResumeBench } from "./resume/index.tsx";
import { runServerBench } from "./server/index.ts";
import { runServerSseBench } from "./server-sse/index.ts";
import { runMetricsBench } from "./metrics/index.ts";
import { runBackendsBench } from "./backends/index.ts";
import { runForkBench } from "./fork/index.tsx";
import { runPgFaultsBench } from "./pg-faults/index.ts";
import { runAgentClisBench } from "./agent-clis/index.ts";
import { runQueueBench } from "./queue/index.ts";
import { runCliBench } from "./cli/index.ts";
import { runVectorsBench } from "./vectors/index.ts";

const benches: Record<string, (args: string[]) => Promise<void>> = {
  db: () => runDbBench(),
  durability: () => runDurabilityBench(),
  engine: () => runEngineBench(),
  frames: () => runFramesBench(),
  resume: () => runResumeBench(),
  memory: () => runMemoryBench(),
  daemon: () => runDaemonBench(),
  "signal-latency": () => runSignalLatencyBench(),
  server: () => runServerBench(),
  "server-sse": () => runServerSseBench(),
  metrics: (args) => runMetricsBench(args),
  backends: (args) => runBackendsBench(args),
  fork: (args) => runForkBench(args),
  "pg-faults": (args) => runPgFaultsBench(args),
  "agent-clis": (args) => runAgentClisBench(args),
  queue: (args) => runQueueBench(args),
  cli: (args) => runCliBench(args),
  vectors: (args) => runVectorsBench(args),
  compare: (args) => runCompareBench(args),
};

const [first, ...rest] = process.argv.slice(2);
const selected = first !== undefined && first in benches ? [first] : Object.keys(benches);
const args = first !== undefined && first in benches ? rest : process.argv.slice(2);

let failed = 0;
for (const name of selected) {
  console.log(`\n== bench/${name} ==`);
  try {
    await benches[name]?.(args);
  } catch (e) {
    // One broken bench (say, src/ mid-edit) must not hide the others' tables.
    failed++;
    console.error(`bench/${name} failed: ${(e as Error)?.stack ?? String(e)}`);
  }
}
if (failed > 0) process.exitCode = 1;
