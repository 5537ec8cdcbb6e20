/**
 * bench/server-sse: what dashboard clients on `GET /runs/stream` cost the server. A real `smithers
 * serve` process over a database of RUNS finished runs; N clients follow the runs list (every run,
 * `?limit=1000`); then SLOW runs of six 200 ms steps start (4 at once: about 6 s of work when
 * nothing else loads the server). Printed: the time until all of them finished, and `/health`'s
 * latency (median and worst) sampled every 100 ms meanwhile.
 *
 *   bun run bench/server-sse/index.ts [clients…]     # default: 0 50 200
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSmithersDb } from "../../src/db/index.ts";
import { insertIdleRuns } from "../idle-runs.ts";
import { markdownTable } from "../markdown-table.ts";

const RUNS = 300;
const SLOW = 20;
const cli = join(import.meta.dir, "..", "..", "src", "cli", "index.ts");
const workflows = join(import.meta.dir, "workflows");

/** A `smithers serve` process over a fresh database of RUNS finished runs; resolves with its URL. */
async function serve(dir: string) {
  const dbPath = join(dir, "bench.db");
  const db = openSmithersDb(dbPath);
  await db.close();
  const { Database } = await import("bun:sqlite");
  const sqlite = new Database(dbPath);
  insertIdleRuns(sqlite, 0, RUNS, Date.now());
  sqlite.close();
  const proc = Bun.spawn([process.execPath, cli, "serve", "--port", "0", "--db", dbPath, "--workflows", workflows, "--max-concurrent", "4"], {
    stdout: "pipe",
    stderr: "inherit",
  });
  const decoder = new TextDecoder();
  let seen = "";
  for await (const chunk of proc.stdout) {
    seen += decoder.decode(chunk);
    const url = /listening on (\S+)/.exec(seen)?.[1];
    if (url) return { proc, url };
  }
  throw new Error(`serve exited: ${seen}`);
}

/** A runs-list client: reads the stream until aborted; resolves `first` at its first `runs` event. */
function client(url: string, abort: AbortSignal): { first: Promise<void>; bytes: () => number } {
  let bytes = 0;
  let gotFirst: () => void = () => undefined;
  const first = new Promise<void>((done) => (gotFirst = done));
  void (async () => {
    const res = await fetch(`${url}/runs/stream?limit=1000`, { signal: abort });
    const reader = res.body!.getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      bytes += value.length;
      gotFirst();
    }
  })().catch(() => undefined);
  return { first, bytes: () => bytes };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

async function row(clients: number): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), "smithers-bench-sse-"));
  const { proc, url } = await serve(dir);
  const abort = new AbortController();
  try {
    const all = Array.from({ length: clients }, () => client(url, abort.signal));
    await Promise.all(all.map((c) => c.first));
    const health: number[] = [];
    let done = false;
    const sampling = (async () => {
      while (!done) {
        const t = performance.now();
        await (await fetch(`${url}/health`)).text();
        health.push(performance.now() - t);
        await Bun.sleep(100);
      }
    })();
    const t0 = performance.now();
    for (let i = 0; i < SLOW; i++) {
      const res = await fetch(`${url}/runs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ workflow: "steps", runId: `slow-${i}`, input: { delayMs: 200 } }),
      });
      if (res.status !== 202) throw new Error(`POST /runs: ${res.status} ${await res.text()}`);
    }
    for (;;) {
      const res = await fetch(`${url}/runs?workflow=server-steps&status=finished&limit=1000`);
      if (((await res.json()) as { runs: unknown[] }).runs.length === SLOW) break;
      await Bun.sleep(100);
    }
    const seconds = (performance.now() - t0) / 1000;
    done = true;
    await sampling;
    const mb = all.reduce((n, c) => n + c.bytes(), 0) / 1e6;
    return [String(clients), `${seconds.toFixed(1)} s`, `${median(health).toFixed(1)} ms`, `${Math.max(...health).toFixed(0)} ms`, `${mb.toFixed(1)} MB`];
  } finally {
    abort.abort();
    proc.kill("SIGTERM");
    await proc.exited;
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function runServerSseBench(counts = [0, 50, 200]): Promise<void> {
  const rows: string[][] = [];
  for (const n of counts) rows.push(await row(n));
  const header = ["clients on /runs/stream", `${SLOW} runs (6 × 200 ms, 4 at once)`, "/health median", "/health worst", "sent to clients"];
  console.log(markdownTable(header, rows));
}

if (import.meta.main) await runServerSseBench(process.argv.length > 2 ? process.argv.slice(2).map(Number) : undefined);
