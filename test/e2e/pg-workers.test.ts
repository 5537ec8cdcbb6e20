/**
 * A pool of `smithers worker` processes on one PostgreSQL database: 200 runs of a mixed workflow
 * (sequence, parallel group, loop, an approval decided while the pool runs, a last task) are
 * queued; 4 workers run them, and 2 of the workers are SIGKILLed with runs in flight. The other 2
 * take those runs over once the lease runs out. Checked against the database and the fixture's log
 * of every task-body execution: every run finished, every output row exists exactly once, no
 * attempt's body ran twice, and each task finished exactly once, by its last attempt.
 */
import { expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join, resolve } from "node:path";
import { openSmithersDb, runs } from "../../src/db/index.ts";
import { approve, runWorkflow } from "../../src/engine/index.ts";
import mixed, { expectedNodes } from "../fixtures/mixed.tsx";
import { tempDbPath } from "../helpers.ts";
import { connectPg, pgTestServer } from "../support/postgres.ts";
import { cli, root } from "./cli-helpers.ts";

const RUNS = 200;
const WORKERS = 4;
/** Kill a worker once this many runs finished (one kill each). */
const KILL_AT = [50, 110];
const LEASE = "2s";
const MIXED = resolve("test/fixtures/mixed.tsx");

const pg = await pgTestServer();

test.skipIf(!pg)(
  "4 workers run 200 mixed runs while 2 of them are SIGKILLed: every run finishes, outputs exist once, no body runs twice",
  async () => {
    const url = await pg!.createDatabase();
    const execFile = join(resolve(tempDbPath(), ".."), "exec.log");
    writeFileSync(execFile, "");
    const ids = Array.from({ length: RUNS }, (_, i) => `m${String(i).padStart(3, "0")}`);
    for (const [i, runId] of ids.entries()) await runWorkflow(mixed, { enqueue: true, workflowPath: MIXED, dbPath: url, runId, input: { n: i } });

    const env = { ...process.env, MIXED_EXEC_FILE: execFile, MIXED_PAUSE_MS: "20" };
    const args = ["worker", "--db", url, "--concurrency", "6", "--lease", LEASE, "--poll-interval", "200ms", "--quiet"];
    const workers = Array.from({ length: WORKERS }, () => Bun.spawn([process.execPath, cli, ...args], { cwd: root, env, stdout: "pipe", stderr: "pipe" }));
    const logs = workers.map((w) => Promise.all([new Response(w.stdout).text(), new Response(w.stderr).text()]));
    const db = openSmithersDb(url);
    const sql = connectPg(url);
    const orphaned: number[] = [];
    try {
      const deadline = Date.now() + 150_000;
      let finished = 0;
      let kills = 0;
      while (finished < RUNS) {
        if (Date.now() > deadline) throw new Error(`timed out: ${finished} of ${RUNS} runs finished`);
        // The approval is decided while the pool runs: each run waits there until this loop sees it.
        for (const run of await runs.listRecentRuns(db, { status: "waiting-approval", limit: 500 })) {
          await approve(db, { runId: run.runId, nodeId: "gate", by: "test" }).catch((e: { code?: string }) => {
            if (e.code !== "APPROVAL_DECIDED") throw e;
          });
        }
        finished = Number((await sql`SELECT count(*) AS n FROM _smithers_runs WHERE status = 'finished'`)[0]!.n);
        if (kills < KILL_AT.length && finished >= KILL_AT[kills]!) {
          const victim = workers[kills]!;
          victim.kill("SIGKILL");
          await victim.exited;
          // The runs the dead worker owned: running, owner id naming its pid.
          const owned =
            await sql`SELECT count(*) AS n FROM _smithers_runs WHERE status = 'running' AND runtime_owner_id LIKE ${`${hostname()}:${victim.pid}:%`}`;
          orphaned.push(Number(owned[0]!.n));
          kills++;
        }
        await Bun.sleep(50);
      }
      expect(kills).toBe(2);
      expect(orphaned.reduce((a, b) => a + b, 0)).toBeGreaterThan(0); // the kills hit runs in flight

      const statuses = await sql`SELECT status, count(*) AS n FROM _smithers_runs GROUP BY status`;
      expect(statuses.map((r) => [r.status, Number(r.n)])).toEqual([["finished", RUNS]]);
      expect(Number((await sql`SELECT count(*) AS n FROM _smithers_queue`)[0]!.n)).toBe(0);

      // Every output row exactly once: one per run and node/iteration, none extra.
      type NodeRow = { run_id: string; node_id: string; iteration: number };
      const steps = await sql<(NodeRow & { attempt: number })[]>`SELECT run_id, node_id, iteration, attempt FROM step`;
      const gates = await sql<(NodeRow & { approved: boolean })[]>`SELECT run_id, node_id, iteration, approved FROM approval`;
      const key = (r: NodeRow) => `${r.run_id}:${r.node_id}:${Number(r.iteration)}`;
      const expected = ids.flatMap((runId) => expectedNodes().map((n) => `${runId}:${n.nodeId}:${n.iteration}`)).sort();
      expect([...steps, ...gates].map(key).sort()).toEqual(expected);
      expect(gates.every((g) => g.approved === true)).toBe(true);

      // No attempt's body ran twice; each task finished exactly once, by its last attempt, which wrote its row.
      const attempts = await sql<(NodeRow & { attempt: number; state: string })[]>`SELECT run_id, node_id, iteration, attempt, state FROM _smithers_attempts`;
      const lines = readFileSync(execFile, "utf8").trim().split("\n");
      expect(new Set(lines).size).toBe(lines.length);
      const attemptKeys = new Set(attempts.map((a) => `${key(a)} ${a.attempt}`));
      for (const line of lines) expect(attemptKeys.has(line)).toBe(true);
      const byNode = Map.groupBy(attempts, (a) => key(a));
      const stepAttempt = new Map(steps.map((s) => [key(s), Number(s.attempt)]));
      for (const [node, list] of byNode) {
        const done = list.filter((a) => a.state === "finished");
        expect(done.length).toBe(1);
        expect(Math.max(...list.map((a) => Number(a.attempt)))).toBe(Number(done[0]!.attempt));
        if (stepAttempt.has(node)) expect(stepAttempt.get(node)).toBe(Number(done[0]!.attempt));
      }
      for (const a of attempts) expect(["finished", "abandoned"]).toContain(a.state);
      const abandoned = attempts.filter((a) => a.state === "abandoned").length;
      // The survivors stop cleanly on SIGTERM: nothing in flight by now, exit 0.
      for (const w of workers.slice(KILL_AT.length)) w.kill("SIGTERM");
      expect(await Promise.all(workers.slice(KILL_AT.length).map((w) => w.exited))).toEqual([0, 0]);
      console.log(
        `pg-workers: ${lines.length} task executions for ${expected.length - RUNS} tasks; ${abandoned} abandoned by the kills; runs orphaned per kill: ${orphaned.join(", ")}`,
      );
    } finally {
      for (const w of workers) w.kill("SIGTERM");
      const codes = await Promise.all(workers.map((w) => w.exited));
      const outputs = await Promise.all(logs);
      if (codes.slice(KILL_AT.length).some((c) => c !== 0)) console.error(outputs.map(([o, e]) => `${o}\n${e}`).join("\n---\n"));
      await sql.end();
      await db.close();
    }
  },
  240_000,
);
