/**
 * bench/server: `smithers serve` in this process on a loopback port.
 * - start-run throughput: POST /runs answered 202 per second (50 clients at once; the worker
 *   paused, so it measures admission: validation plus the durable queue insert).
 * - SSE fan-out: 50 clients follow one run (GET /runs/:id/events), live while it runs and as a
 *   replay once it finished; events/s is every event delivered to every client over the wall time.
 *
 *   bun run bench/server/index.ts [requests]     # default 2000
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer } from "../../src/server/index.ts";
import { markdownTable } from "../markdown-table.ts";
import workflow from "./workflow.tsx";

const CLIENTS = 50;
const workflowPath = join(import.meta.dir, "workflow.tsx");

async function withServer<T>(maxConcurrent: number, fn: (url: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), "smithers-bench-server-"));
  const server = await createServer({
    dbPath: join(dir, "bench.db"),
    workflows: [{ name: "bench", path: workflowPath, workflow }],
    queueCapacity: 1_000_000,
    maxConcurrent,
  });
  const { url } = await server.start({ port: 0 });
  try {
    return await fn(url);
  } finally {
    await server.stop({ drain: true });
    rmSync(dir, { recursive: true, force: true });
  }
}

const start = (url: string, runId: string) =>
  fetch(`${url}/runs`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ workflow: "bench", runId }) });

async function startThroughput(requests: number): Promise<string[]> {
  return withServer(0, async (url) => {
    let next = 0;
    let accepted = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (next < requests) {
          const res = await start(url, `r${next++}`);
          if (res.status === 202) accepted++;
          await res.body?.cancel();
        }
      }),
    );
    const s = (performance.now() - t0) / 1000;
    return ["start run (POST /runs → 202)", String(accepted), `${(accepted / s).toFixed(0)} runs/s`];
  });
}

/** Counts the events one client receives until the stream ends. */
async function follow(url: string, runId: string): Promise<number> {
  const res = await fetch(`${url}/runs/${runId}/events`);
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let n = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return n;
    n += value.split("\nid: ").length - 1 + (value.startsWith("id: ") ? 1 : 0);
  }
}

async function fanOut(): Promise<string[][]> {
  return withServer(1, async (url) => {
    await start(url, "live");
    let t0 = performance.now();
    const live = await Promise.all(Array.from({ length: CLIENTS }, () => follow(url, "live")));
    const liveS = (performance.now() - t0) / 1000;
    t0 = performance.now();
    const replay = await Promise.all(Array.from({ length: CLIENTS }, () => follow(url, "live")));
    const replayS = (performance.now() - t0) / 1000;
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    return [
      [`SSE live, ${CLIENTS} clients (${live[0]} events each)`, String(sum(live)), `${(sum(live) / liveS).toFixed(0)} events/s`],
      [`SSE replay, ${CLIENTS} clients (${replay[0]} events each)`, String(sum(replay)), `${(sum(replay) / replayS).toFixed(0)} events/s`],
    ];
  });
}

export async function runServerBench(requests = 2000): Promise<void> {
  const rows = [await startThroughput(requests), ...(await fanOut())];
  console.log(markdownTable(["measure", "count", "rate"], rows));
}

if (import.meta.main) await runServerBench(Number(process.argv[2] ?? 2000));
