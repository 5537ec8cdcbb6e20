/**
 * A network partition between a worker and PostgreSQL. Worker A runs in a network namespace of
 * its own and reaches the server over a veth pair; worker B runs here. While A has runs in
 * flight, one of them inside a step transaction (a trigger holds that transaction open on the
 * server, with the run's row locked), A's link is set down for three leases, then up again.
 *
 * Safety: every output row exists once, no finished task's body ran again, A's late commits are
 * refused (RUN_OWNED), and A takes new runs after the heal. Liveness: while A is cut off, B
 * finishes every run it can, i.e. every run whose row A does not hold locked, and one queued by
 * `up --detach` during the cut; a read-only command (`smithers ps`) answers at once.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { ensurePostgresBinDir } from "../../scripts/postgres/binaries.ts";
import { runWorkflow } from "../../src/engine/index.ts";
import partition, { STEPS } from "../fixtures/partition.tsx";
import { tempDir } from "../helpers.ts";
import { createNetns, netnsUnavailable } from "../support/netns.ts";
import { connectPg, startPostgres } from "../support/postgres.ts";
import { cli, root } from "./cli-helpers.ts";

const FIXTURE = resolve("test/fixtures/partition.tsx");
const LEASE_MS = 2_000;
/** How long A is cut off: three leases, so B has time to take A's runs over and finish them. */
const CUT_MS = 3 * LEASE_MS;
/** The run whose second step A is committing when the link goes down. */
const HELD = "held";
const OTHERS = Array.from({ length: 7 }, (_, i) => `r${i}`);
const AFTER = ["after0", "after1"];
/** A run queued with `up --detach` while A is cut off. */
const DURING = "during";

const pgFound = ensurePostgresBinDir();
const skipReason = pgFound.found ? netnsUnavailable() : pgFound.reason;
if (skipReason) console.warn(`\n!!! partition test SKIPPED: ${skipReason} !!!\n`);

async function until(what: string, timeoutMs: number, check: () => Promise<boolean>, pollMs = 50): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(pollMs);
  }
}

type Worker = { proc: Bun.Subprocess<"ignore", "pipe", "pipe">; output: Promise<string> };

/**
 * A namespace `a` over a veth pair, a server listening on both sides, an empty database (`url`
 * from here, `urlA` from the namespace), the fixture's execution log, and workers to start.
 */
async function partitionSetup(pauseMs: number) {
  const ns = createNetns("part");
  const server = await startPostgres({ hosts: [ns.hostAddress] }).catch((error: unknown) => {
    ns.remove();
    throw error;
  });
  const url = await server.createDatabase();
  const execFile = join(tempDir(), "exec.log");
  writeFileSync(execFile, "");
  const sql = connectPg(url);
  const spawned: Worker["proc"][] = [];
  return {
    ns,
    url,
    urlA: url.replace("127.0.0.1", ns.hostAddress),
    execFile,
    sql,
    /** `smithers worker` on `db`; in the namespace with `inNs`; its clock `skewMs` off. */
    worker(db: string, concurrency: number, o: { inNs?: boolean; skewMs?: number } = {}): Worker {
      const bun = [process.execPath, ...(o.skewMs ? ["--preload", join(root, "test/support/skew-clock.ts")] : [])];
      const args = [cli, "worker", "--db", db, "--concurrency", String(concurrency), "--lease", `${LEASE_MS}ms`, "--poll-interval", "200ms", "--quiet"];
      const argv = o.inNs ? ns.exec([...bun, ...args]) : [...bun, ...args];
      const env = { ...process.env, PARTITION_EXEC_FILE: execFile, PARTITION_PAUSE_MS: String(pauseMs), SMITHERS_TEST_CLOCK_SKEW_MS: String(o.skewMs ?? 0) };
      const proc = Bun.spawn(argv, { cwd: root, env, stdout: "pipe", stderr: "pipe" });
      spawned.push(proc);
      return { proc, output: Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]).then(([out, err]) => `${out}\n${err}`) };
    },
    count: async (text: string) => Number((await sql.unsafe(text))[0]!.n),
    /** Each execution the log records: `runId:nodeId:iteration attempt pid`. */
    executions: () => readFileSync(execFile, "utf8").trim().split("\n"),
    async cleanup() {
      for (const p of spawned) p.kill("SIGKILL");
      await Promise.all(spawned.map((p) => p.exited));
      await sql.end({ timeout: 1 });
      await server.stop();
      ns.remove();
    },
  };
}

describe.skipIf(skipReason !== undefined)("a worker cut off from PostgreSQL", () => {
  test("stalls nothing: B runs every run A does not hold locked during the cut; no row twice, no finished body again, A's late commits refused, A carries on", async () => {
    const { ns, url, urlA, sql, worker, count, executions, cleanup } = await partitionSetup(300);
    const unfinished = () => sql.unsafe<{ run_id: string }[]>("SELECT run_id FROM _smithers_runs WHERE status <> 'finished' ORDER BY run_id");
    try {
      for (const [n, runId] of [HELD, ...OTHERS].entries()) {
        await runWorkflow(partition, { enqueue: true, workflowPath: FIXTURE, dbPath: url, runId, input: { n } });
      }
      // Holds the step transaction that writes the held run's s1 row open on the server for 2 s,
      // after its owner check locked the run's row: the window the link is cut in.
      await sql.unsafe(`CREATE FUNCTION hold_step() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.run_id = '${HELD}' AND NEW.node_id = 's1' THEN PERFORM pg_sleep(2); END IF; RETURN NEW; END $$`);
      await sql.unsafe("CREATE TRIGGER hold_step BEFORE INSERT ON step FOR EACH ROW EXECUTE FUNCTION hold_step()");

      const a = worker(urlA, 3, { inNs: true });
      const ownedByA = `SELECT count(*) AS n FROM _smithers_runs WHERE status = 'running' AND runtime_owner_id LIKE '%:${a.proc.pid}:%'`;
      await until("worker A to take 3 runs", 20_000, async () => (await count(ownedByA)) === 3);
      const b = worker(url, 8);
      // Cut while the held step waits in the trigger and A's other runs are between transactions
      // (in a task body): their rows are free, so B can take them over during the cut.
      const aBackends = `SELECT count(*) FILTER (WHERE wait_event = 'PgSleep') AS sleeping,
          count(*) FILTER (WHERE state <> 'idle' AND wait_event IS DISTINCT FROM 'PgSleep') AS busy
        FROM pg_stat_activity WHERE client_addr = '${ns.nsAddress}'`;
      await until(
        "A to commit the held step while its other runs are in a task body",
        20_000,
        async () => {
          const [row] = await sql.unsafe<{ sleeping: number; busy: number }[]>(aBackends);
          return Number(row?.sleeping) === 1 && Number(row?.busy) === 0;
        },
        5,
      );
      const aRunsAtCut = await count(ownedByA);

      ns.cut();
      const cutAt = Date.now();
      const psExit = await Bun.spawn([process.execPath, cli, "ps", "--db", url], { cwd: root, stdout: "ignore", stderr: "ignore" }).exited;
      const psMs = Date.now() - cutAt;
      // A run queued during the cut is one B can run.
      const upArgs = ["up", FIXTURE, "--detach", "--db", url, "--run-id", DURING, "--input", '{"n":9}'];
      const upExit = await Bun.spawn([process.execPath, cli, ...upArgs], { cwd: root, stdout: "ignore", stderr: "ignore" }).exited;
      const upMs = Date.now() - cutAt - psMs;
      // Every run B can run is finished while A is still cut off: those left are held locked by A's open transactions.
      let lockedAtHeal: string[] = [];
      let allItCouldMs: number | undefined;
      while (Date.now() - cutAt < CUT_MS) {
        const left = (await unfinished()).map((r) => r.run_id);
        const locked = await sql.begin(async (tx) => {
          const free = new Set((await tx.unsafe<{ run_id: string }[]>("SELECT run_id FROM _smithers_runs FOR UPDATE SKIP LOCKED")).map((r) => r.run_id));
          return left.filter((id) => !free.has(id));
        });
        lockedAtHeal = locked;
        if (allItCouldMs === undefined && left.length === locked.length) allItCouldMs = Date.now() - cutAt;
        await Bun.sleep(100);
      }
      const leftAtHeal = (await unfinished()).map((r) => r.run_id);
      const duringAtHeal = await count(`SELECT count(*) AS n FROM _smithers_runs WHERE run_id = '${DURING}' AND status = 'finished'`);
      ns.heal();

      await until("every run to finish after the heal", 60_000, async () => (await unfinished()).length === 0);
      // A carries on: with B stopped, runs queued now are A's.
      b.proc.kill("SIGTERM");
      expect(await b.proc.exited).toBe(0);
      for (const [n, runId] of AFTER.entries()) {
        await runWorkflow(partition, { enqueue: true, workflowPath: FIXTURE, dbPath: url, runId, input: { n } });
      }
      const finished = "SELECT count(*) AS n FROM _smithers_runs WHERE status = 'finished'";
      await until("A to run the runs queued after the heal", 60_000, async () => (await count(finished)) === 2 + OTHERS.length + AFTER.length);
      a.proc.kill("SIGTERM");
      expect(await a.proc.exited).toBe(0);
      const aOutput = await a.output;

      expect(psExit).toBe(0);
      expect(psMs).toBeLessThan(CUT_MS); // answered while A was still cut off
      expect(upExit).toBe(0);
      expect(duringAtHeal).toBe(1);
      expect(aRunsAtCut).toBe(3);
      expect(leftAtHeal).toEqual(lockedAtHeal);
      expect(leftAtHeal.length).toBeLessThan(aRunsAtCut); // B took at least one of A's runs and finished it during the cut
      expect(allItCouldMs).toBeDefined();

      // Each output row once; each task finished once, by its last attempt; no body ran twice.
      const all = [HELD, ...OTHERS, DURING, ...AFTER];
      const rows = await sql<{ run_id: string; node_id: string }[]>`SELECT run_id, node_id FROM step`;
      const expected = all.flatMap((runId) => Array.from({ length: STEPS }, (_, i) => `${runId}:s${i}`)).sort();
      expect(rows.map((r) => `${r.run_id}:${r.node_id}`).sort()).toEqual(expected);
      const attempts = await sql<{ run_id: string; node_id: string; attempt: number; state: string }[]>`
        SELECT run_id, node_id, attempt, state FROM _smithers_attempts`;
      const byNode = Map.groupBy(attempts, (x) => `${x.run_id}:${x.node_id}`);
      for (const list of byNode.values()) {
        const done = list.filter((x) => x.state === "finished");
        expect(done.length).toBe(1);
        expect(Math.max(...list.map((x) => Number(x.attempt)))).toBe(Number(done[0]!.attempt));
      }
      const lines = executions();
      const begun = lines.map((l) => l.split(" ").slice(0, 2).join(" "));
      expect(new Set(begun).size).toBe(begun.length);
      const attemptKeys = new Set(attempts.map((x) => `${x.run_id}:${x.node_id}:0 ${x.attempt}`));
      for (const e of begun) expect(attemptKeys.has(e)).toBe(true);
      // The runs queued after the heal ran in A.
      const afterPids = new Set(lines.filter((l) => AFTER.some((id) => l.startsWith(`${id}:`))).map((l) => l.split(" ")[2]));
      expect([...afterPids]).toEqual([String(a.proc.pid)]);
      // A's commits for the runs B took over were refused once the link came back.
      expect(aOutput).toContain("RUN_OWNED");
      console.log(
        `partition: A held ${aRunsAtCut} runs at the cut; B had run all it could ${allItCouldMs} ms into the ${CUT_MS} ms cut; ` +
          `left for the heal (locked by A): ${leftAtHeal.join(", ") || "none"}; ps answered in ${psMs} ms, up --detach in ${upMs} ms`,
      );
    } finally {
      await cleanup();
    }
  }, 120_000);

  test("clock skew between hosts does not make a live run stale: B, a minute ahead, leaves the run of A, a minute behind, alone", async () => {
    const { urlA, url, worker, count, executions, cleanup } = await partitionSetup(600);
    try {
      await runWorkflow(partition, { enqueue: true, workflowPath: FIXTURE, dbPath: url, runId: "skewed", input: { n: 0 } });
      const a = worker(urlA, 1, { inNs: true, skewMs: -60_000 });
      await until(
        "A to take the run",
        20_000,
        async () => (await count(`SELECT count(*) AS n FROM _smithers_runs WHERE runtime_owner_id LIKE '%:${a.proc.pid}:%'`)) === 1,
      );
      const b = worker(url, 1, { skewMs: 60_000 });
      await until("the run to finish", 30_000, async () => (await count("SELECT count(*) AS n FROM _smithers_runs WHERE status = 'finished'")) === 1);
      b.proc.kill("SIGTERM");
      expect(await b.proc.exited).toBe(0);
      expect(await b.output).not.toContain("skewed");
      expect(new Set(executions().map((l) => l.split(" ")[2]))).toEqual(new Set([String(a.proc.pid)]));
      expect(await count("SELECT count(*) AS n FROM _smithers_attempts WHERE state <> 'finished'")).toBe(0);
    } finally {
      await cleanup();
    }
  }, 60_000);
});
