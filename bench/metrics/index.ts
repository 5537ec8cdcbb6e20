/**
 * bench/metrics: what a Prometheus scrape costs `smithers serve` on a large database. The database
 * holds N runs (one in ten waiting, the rest finished; default 100,000) and N/100 requests queued
 * for workers; then `GET /metrics` over loopback with the bearer token, 31 times, as Prometheus
 * would scrape it. Also the one-time cost of loading prom-client (paid by serve, worker
 * --metrics-port and supervise --metrics-port only).
 *
 *   bun run bench/metrics/index.ts [runs]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SqliteDb } from "../../src/db/index.ts";
import { createServer } from "../../src/server/index.ts";
import { insertIdleRuns } from "../idle-runs.ts";
import { markdownTable } from "../markdown-table.ts";

const TOKEN = "bench-metrics-token-0123456789";

const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;

export async function runMetricsBench(args: string[] = []): Promise<void> {
  const n = Number(args[0] ?? 100_000);
  const dir = mkdtempSync(join(tmpdir(), "smithers-bench-metrics-"));
  const dbPath = join(dir, "smithers.db");
  try {
    const setup = new SqliteDb(dbPath);
    insertIdleRuns(setup.sqlite, Math.round(n / 10), n - Math.round(n / 10), Date.now());
    const queued = setup.sqlite.prepare("INSERT INTO _smithers_queue (run_id, workflow_name, workflow_path, enqueued_at_ms) VALUES (?, 'w', '/w.tsx', ?)");
    setup.sqlite.transaction(() => {
      for (let i = 0; i < n / 100; i++) queued.run(`q${i}`, Date.now());
    })();
    const plan = setup.sqlite
      .query<{ detail: string }, []>(
        "EXPLAIN QUERY PLAN SELECT status, count(*) FROM _smithers_runs WHERE status IN ('running', 'paused', 'waiting-approval', 'waiting-event', 'waiting-timer') GROUP BY status",
      )
      .all()
      .map((r) => r.detail);
    await setup.close();

    const loadStarted = performance.now();
    await import("prom-client");
    const loadMs = performance.now() - loadStarted;

    const server = await createServer({ dbPath, token: TOKEN, maxConcurrent: 0 });
    const { url } = await server.start({ port: 0 });
    const times: number[] = [];
    let bytes = 0;
    try {
      for (let i = 0; i < 31; i++) {
        const started = performance.now();
        const res = await fetch(`${url}/metrics`, { headers: { Authorization: `Bearer ${TOKEN}` } });
        bytes = (await res.text()).length;
        if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}`);
        times.push(performance.now() - started);
      }
    } finally {
      await server.stop({ drain: false });
    }
    const ms = (x: number) => x.toFixed(1);
    console.log(
      markdownTable(
        ["measure", "value"],
        [
          ["runs in the database", n.toLocaleString("en")],
          ["queued requests", (n / 100).toLocaleString("en")],
          ["GET /metrics, median ms (31 scrapes)", ms(quantile(times, 0.5))],
          ["GET /metrics, p90 ms", ms(quantile(times, 0.9))],
          ["GET /metrics, first scrape ms", ms(times[0]!)],
          ["response bytes", String(bytes)],
          ["import prom-client, ms (once per process)", ms(loadMs)],
        ],
      ),
    );
    console.log(`\nruns per status: ${plan.join("; ")}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) await runMetricsBench(process.argv.slice(2));
