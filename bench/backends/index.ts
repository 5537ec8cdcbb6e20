/**
 * bench/backends: SQLite and PostgreSQL side by side, with `smithers worker` processes.
 *
 * For each backend, in one run of this script:
 * - the floor: no engine, one committed INSERT per "task" on one connection (SQLite: bun:sqlite on
 *   a WAL file with synchronous = NORMAL, as bench/compare's floor; PostgreSQL: postgres.js,
 *   autocommit), ms per row;
 * - seq-N and par-N (./workflow.tsx, bench/compare's shapes) with W workers: W `smithers worker`
 *   processes (--concurrency 1) are started and idle, then W runs are queued at once, one per
 *   worker. Measured from the first run's start to the last run's end (`_smithers_runs`
 *   started_at_ms/finished_at_ms, so process start-up and pick-up latency are not counted):
 *   ms per task = that span / (W × N). With 4 workers it is the pool's throughput while 4
 *   processes commit to one database at once.
 *
 * PostgreSQL is a real server started for the bench by scripts/postgres/server.ts with fsync,
 * full-page writes and synchronous_commit on (a production server's durability); each
 * measurement gets a fresh database. Medians of --reps (default 3).
 *
 *   bun run bench/backends/index.ts [--n 1000] [--workers 1,4] [--reps 3]
 */
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import postgres from "postgres";
import { openSmithersDb } from "../../src/db/index.ts";
import { runWorkflow } from "../../src/engine/index.ts";
import { ensurePostgresBinDir } from "../../scripts/postgres/binaries.ts";
import { startPostgres, type PostgresServer } from "../../scripts/postgres/server.ts";
import { markdownTable } from "../markdown-table.ts";
import workflow from "./workflow.tsx";

const ROOT = resolve(import.meta.dir, "../..");
const CLI = join(ROOT, "src/cli/index.ts");
const WORKFLOW = join(import.meta.dir, "workflow.tsx");

type Backend = "sqlite" | "postgres";
type Target = { backend: Backend; target: string; cleanup: () => void };

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function freshTarget(backend: Backend, pg: PostgresServer | undefined): Promise<Target> {
  if (backend === "postgres") return { backend, target: await pg!.createDatabase(), cleanup: () => undefined };
  const dir = mkdtempSync(join(tmpdir(), "smithers-bench-backends-"));
  return { backend, target: join(dir, "bench.db"), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

const FLOOR_TABLE =
  "CREATE TABLE out (run_id TEXT NOT NULL, node_id TEXT NOT NULL, iteration INTEGER NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (run_id, node_id, iteration))";

/** ms per committed INSERT, one transaction each, on one connection. */
async function floor(t: Target, n: number): Promise<number> {
  if (t.backend === "sqlite") {
    const db = new Database(t.target, { create: true });
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA synchronous = NORMAL");
    db.exec(FLOOR_TABLE);
    const insert = db.prepare("INSERT INTO out (run_id, node_id, iteration, n) VALUES (?, ?, 0, ?)");
    const t0 = performance.now();
    for (let i = 0; i < n; i++) insert.run("floor", `t${i}`, i);
    const ms = performance.now() - t0;
    db.close();
    return ms / n;
  }
  const sql = postgres(t.target, { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(FLOOR_TABLE);
    const t0 = performance.now();
    for (let i = 0; i < n; i++) await sql`INSERT INTO out (run_id, node_id, iteration, n) VALUES ('floor', ${`t${i}`}, 0, ${i})`;
    return (performance.now() - t0) / n;
  } finally {
    await sql.end();
  }
}

/** Starts `workers` idle worker processes, queues one run each, and returns ms per task of the span from first start to last end. */
async function pool(t: Target, shape: "seq" | "par", n: number, workers: number): Promise<number> {
  const db = openSmithersDb(t.target);
  const procs = Array.from({ length: workers }, () =>
    Bun.spawn([process.execPath, CLI, "worker", "--db", t.target, "--concurrency", "1", "--poll-interval", "10ms", "--quiet"], {
      cwd: ROOT,
      stdout: "pipe",
      stderr: "ignore", // its SIGTERM line; a worker that fails leaves its run unfinished, and that is reported
    }),
  );
  try {
    // Each worker prints its banner once it is ready to claim.
    await Promise.all(
      procs.map(async (p) => {
        const reader = (p.stdout as ReadableStream).pipeThrough(new TextDecoderStream()).getReader();
        let text = "";
        while (!text.includes("smithers worker")) {
          const { value, done } = await reader.read();
          if (done) throw new Error(`a worker exited before it was ready: ${text}`);
          text += value;
        }
        void (async () => {
          while (!(await reader.read()).done);
        })();
      }),
    );
    const ids = Array.from({ length: workers }, (_, i) => `${shape}-${i}`);
    for (const runId of ids) await runWorkflow(workflow, { enqueue: true, workflowPath: WORKFLOW, dbPath: t.target, runId, input: { shape, n } });
    const deadline = Date.now() + 600_000;
    for (;;) {
      const rows = await db.read("bench", (q) =>
        q.all<{ status: string; startedAtMs: number | null; finishedAtMs: number | null }>(
          `SELECT status, started_at_ms AS "startedAtMs", finished_at_ms AS "finishedAtMs" FROM _smithers_runs`,
        ),
      );
      if (rows.length === workers && rows.every((r) => r.status !== "running")) {
        const failed = rows.filter((r) => r.status !== "finished");
        if (failed.length > 0) throw new Error(`${failed.length} run(s) did not finish: ${failed.map((r) => r.status).join(", ")}`);
        const span = Math.max(...rows.map((r) => Number(r.finishedAtMs))) - Math.min(...rows.map((r) => Number(r.startedAtMs)));
        return span / (workers * n);
      }
      if (Date.now() > deadline) throw new Error("runs did not finish within 10 minutes");
      await Bun.sleep(20);
    }
  } finally {
    for (const p of procs) p.kill("SIGTERM");
    await Promise.all(procs.map((p) => p.exited));
    await db.close();
  }
}

export async function runBackendsBench(argv: string[] = []): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { n: { type: "string" }, workers: { type: "string" }, reps: { type: "string" } } });
  const n = Number(values.n ?? 1_000);
  const workerCounts = (values.workers ?? "1,4").split(",").map(Number);
  const reps = Number(values.reps ?? 3);
  const found = ensurePostgresBinDir();
  if (!found.found) {
    console.log(`bench/backends: PostgreSQL is not installed (${found.reason}); run scripts/postgres/ensure.sh as root`);
    return;
  }
  const pg = await startPostgres({ fsync: true });
  try {
    const backends: Backend[] = ["sqlite", "postgres"];
    const measure = async (what: (t: Target) => Promise<number>) => {
      const out: Record<Backend, number> = { sqlite: 0, postgres: 0 };
      for (const backend of backends) {
        const samples: number[] = [];
        for (let r = 0; r < reps; r++) {
          const t = await freshTarget(backend, pg);
          try {
            samples.push(await what(t));
          } finally {
            t.cleanup();
          }
        }
        out[backend] = median(samples);
      }
      return out;
    };
    const floors = await measure((t) => floor(t, n));
    const rows: [string, Record<Backend, number>][] = [[`floor, ${n} committed inserts`, floors]];
    for (const shape of ["seq", "par"] as const) {
      for (const w of workerCounts)
        rows.push([`${shape}-${n}, ${w} worker${w === 1 ? "" : "s"} (${w} run${w === 1 ? "" : "s"})`, await measure((t) => pool(t, shape, n, w))]);
    }
    const f = (x: number) => x.toFixed(3);
    console.log(`\nms per task, median of ${reps}; "x floor" is the row over its backend's floor. PostgreSQL with fsync on.\n`);
    console.log(
      markdownTable(
        ["", "SQLite ms/task", "x floor", "PostgreSQL ms/task", "x floor", "PostgreSQL / SQLite"],
        rows.map(([label, v]) => [
          label,
          f(v.sqlite),
          (v.sqlite / floors.sqlite).toFixed(1),
          f(v.postgres),
          (v.postgres / floors.postgres).toFixed(1),
          (v.postgres / v.sqlite).toFixed(2),
        ]),
      ),
    );
  } finally {
    await pg.stop();
  }
}

if (import.meta.main) await runBackendsBench(process.argv.slice(2));
