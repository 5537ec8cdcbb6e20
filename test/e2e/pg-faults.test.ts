/**
 * PostgreSQL faults under two workers: a server of its own (the shared test server is never
 * restarted) and two in-process Workers, each with its own pool, run a batch of runs while the
 * server is restarted (`pg_ctl restart -m fast`) and every worker connection is killed
 * (`pg_terminate_backend`) twice. Checked against the database and the fixture's log of every
 * task body that began: every run finished, no body began twice, nothing was thrown uncaught (the
 * driver's `socket.write` TypeError), and no step took 5 s or more, a step's time being from its
 * attempt's start to the next step's start (or the run's end), so a stalled commit counts.
 */
import { afterAll, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { openSmithersDb, type SmithersDb } from "../../src/db/index.ts";
import { runWorkflow, Worker, type WorkerOutcome } from "../../src/engine/index.ts";
import workflow, { STEPS } from "../fixtures/pg-faults.tsx";
import { tempDbPath } from "../helpers.ts";
import { connectPg, pgTestServer, type PostgresServer, startPostgres } from "../support/postgres.ts";

const RUNS = 40;
const WORKFLOW = resolve("test/fixtures/pg-faults.tsx");
/** A takeover would need this long: any step near it means a fault was not survived in place. */
const LEASE_MS = 10_000;
const SLOWEST_STEP_MS = 5_000;
/** Errors of the test's own client that a restart or a connection kill can cause (57P03: the server is starting). */
const OWN_CLIENT_CUT = new Set(["ECONNRESET", "ECONNREFUSED", "CONNECTION_CLOSED", "CONNECTION_ENDED", "CONNECTION_DESTROYED", "57P03"]);

// The shared server's presence says whether PostgreSQL is installed; the restart needs a server of its own.
const available = (await pgTestServer()) !== undefined;
let server: PostgresServer | undefined;
afterAll(async () => {
  await server?.stop();
});

test.skipIf(!available)(
  "2 workers finish 40 runs through a server restart and 2 kills of their connections: no body twice, no uncaught error, every step under 5 s",
  async () => {
    server = await startPostgres();
    const url = await server.createDatabase();
    const execFile = join(resolve(tempDbPath(), ".."), "pg-faults-exec.log");
    writeFileSync(execFile, "");
    process.env.PG_FAULTS_EXEC_FILE = execFile;
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => uncaught.push(error);
    process.on("uncaughtException", onUncaught);
    process.on("unhandledRejection", onUncaught);

    const setup = openSmithersDb(url);
    const ids = Array.from({ length: RUNS }, (_, i) => `f${String(i).padStart(2, "0")}`);
    for (const [n, runId] of ids.entries()) await runWorkflow(workflow, { enqueue: true, workflowPath: WORKFLOW, dbPath: url, runId, input: { n } });
    await setup.close();

    const errors: string[] = [];
    const onOutcome = (o: WorkerOutcome) => {
      if (o.action === "error" || o.action === "dropped" || (o.action === "ran" && o.result.status === "failed")) errors.push(JSON.stringify(o).slice(0, 400));
    };
    const stop = new AbortController();
    const dbs: SmithersDb[] = [openSmithersDb(url), openSmithersDb(url)];
    const workers = dbs.map(
      (db) =>
        new Worker({ db, concurrency: 4, leaseMs: LEASE_MS, pollIntervalMs: 200, workflows: [{ name: "pg-faults", path: WORKFLOW, workflow }], onOutcome }),
    );
    const running = workers.map((w) => w.run(stop.signal));
    let sql = connectPg(url, { max: 1 });
    // The test's own stock client is not what is under test: a query of it that the restart or a
    // kill cuts off (ECONNRESET, a server still starting) is asked again, for up to 5 s.
    const finished = async (): Promise<number> => {
      for (const deadline = Date.now() + 5_000; ; ) {
        try {
          return Number((await sql`SELECT count(*) AS n FROM _smithers_runs WHERE status = 'finished'`)[0]!.n);
        } catch (error) {
          if (Date.now() > deadline || !OWN_CLIENT_CUT.has(String((error as { code?: unknown }).code))) throw error;
          await Bun.sleep(50);
        }
      }
    };
    const killWorkerConnections = () =>
      sql`SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`;
    try {
      const faults: string[] = [];
      const waitFor = async (runs: number) => {
        const deadline = Date.now() + 30_000;
        while ((await finished()) < runs) {
          if (Date.now() > deadline) throw new Error(`timed out waiting for ${runs} finished runs`);
          await Bun.sleep(25);
        }
      };
      await waitFor(4);
      // The test's own stock postgres.js client is closed over the restart: it is not what is under test.
      await sql.end().catch(() => undefined);
      await server.restart();
      sql = connectPg(url, { max: 1 });
      faults.push(`restart at ${await finished()}`);
      await waitFor(14);
      faults.push(`kill of ${(await killWorkerConnections())[0]!.n} connections at ${await finished()}`);
      await waitFor(24);
      faults.push(`kill of ${(await killWorkerConnections())[0]!.n} connections at ${await finished()}`);
      await waitFor(RUNS);

      const statuses = await sql`SELECT status, count(*) AS n FROM _smithers_runs GROUP BY status`;
      expect(statuses.map((r) => [r.status, Number(r.n)])).toEqual([["finished", RUNS]]);
      expect(errors).toEqual([]);
      expect(uncaught.map(String)).toEqual([]);

      // Each node's body began once, and by the attempt that finished it.
      const lines = readFileSync(execFile, "utf8").trim().split("\n");
      expect(lines.length).toBe(RUNS * STEPS);
      expect(new Set(lines.map((l) => l.split(" ")[0])).size).toBe(RUNS * STEPS);
      type Attempt = { run_id: string; node_id: string; attempt: number; state: string; started_at_ms: number };
      const attempts = await sql<Attempt[]>`SELECT run_id, node_id, attempt, state, started_at_ms FROM _smithers_attempts ORDER BY run_id, started_at_ms`;
      expect(attempts.every((a) => a.state === "finished")).toBe(true);
      expect(new Set(lines)).toEqual(new Set(attempts.map((a) => `${a.run_id}:${a.node_id}:0 ${a.attempt}`)));

      const ends = new Map(
        (await sql<{ run_id: string; finished_at_ms: number }[]>`SELECT run_id, finished_at_ms FROM _smithers_runs`).map((r) => [r.run_id, r.finished_at_ms]),
      );
      const steps = attempts.map((a, i) => {
        const next = attempts[i + 1];
        const until = next?.run_id === a.run_id ? next.started_at_ms : ends.get(a.run_id)!;
        return { step: `${a.run_id}:${a.node_id}`, ms: until - a.started_at_ms };
      });
      const slowest = steps.reduce((a, b) => (b.ms > a.ms ? b : a));
      console.log(`pg-faults: ${faults.join("; ")}; slowest step ${slowest.step} ${slowest.ms} ms`);
      expect(slowest.ms).toBeLessThan(SLOWEST_STEP_MS);
    } finally {
      stop.abort();
      await Promise.all(running);
      process.off("uncaughtException", onUncaught);
      process.off("unhandledRejection", onUncaught);
      await sql.end();
      await Promise.all(dbs.map((db) => db.close()));
    }
  },
  90_000,
);
