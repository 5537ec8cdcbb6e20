/**
 * kill -9 around continue-as-new: `smithers up test/fixtures/continue-loop.tsx` (a setup task, then
 * 8 loop iterations continuing as a new run every 2) is SIGKILLed, first the moment it reports a
 * continuation, then at seeded random moments, and resumed with --resume on the first run's id
 * until a process exits 0. The chain must come out as exactly run, run~1, run~2, run~3 (never two
 * successors of one run), every iteration finished exactly once in the run it belongs to, and
 * every execution of a task body recorded as an attempt.
 *
 * Re-run one schedule with CONTINUE_CRASH_SEED=<seed> npx bun test test/e2e/continue-as-new-crash.test.ts
 */
import { expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { prng, sql, tempDbPath } from "../helpers.ts";
import { cli, root } from "./cli-helpers.ts";
import { EVERY, TICKS } from "../fixtures/continue-loop.tsx";

const FIXTURE = "test/fixtures/continue-loop.tsx";
const RUN_ID = "can";
const CONTINUED_MARKER = `continue run ${RUN_ID} continued as run`;
const MAX_PROCESSES = 80;
const WATCHDOG_MS = 30_000;

type Kill = { marker: string } | { afterFirstOutputMs: number } | "never";
type Life = { code: number | null; killed: boolean; stdout: string; stderr: string };

/** One `smithers up` process, killed with SIGKILL as `kill` says unless it exits first. */
async function life(dbPath: string, resume: boolean, kill: Kill): Promise<Life> {
  const args = ["up", FIXTURE, "--db", dbPath, "--run-id", RUN_ID, ...(resume ? ["--resume"] : [])];
  const proc = Bun.spawn([process.execPath, cli, ...args], {
    cwd: root,
    env: { ...process.env, CALLS_FILE: join(dirname(dbPath), "calls.txt") },
    stdout: "pipe",
    stderr: "pipe",
  });
  let stdout = "";
  let due!: () => void;
  const killDue = new Promise<void>((resolve) => (due = resolve));
  const drained = (async () => {
    const decoder = new TextDecoder();
    let first = true;
    for await (const chunk of proc.stdout) {
      stdout += decoder.decode(chunk, { stream: true });
      if (typeof kill === "object" && "marker" in kill && stdout.includes(kill.marker)) due();
      if (first && typeof kill === "object" && "afterFirstOutputMs" in kill) setTimeout(due, kill.afterFirstOutputMs);
      first = false;
    }
  })();
  const stderr = new Response(proc.stderr).text();
  const watchdog = setTimeout(due, WATCHDOG_MS);
  await Promise.race([killDue, proc.exited]);
  clearTimeout(watchdog);
  if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
  await proc.exited;
  await drained;
  return { code: proc.exitCode, killed: proc.signalCode === "SIGKILL", stdout, stderr: await stderr };
}

/** The run that iteration `i` of the loop belongs to: iterations 0-1 in "can", 2-3 in "can~1", … */
const ownerOf = (iteration: number) => (iteration < EVERY ? RUN_ID : `${RUN_ID}~${Math.floor(iteration / EVERY)}`);

/** Everything the finished chain must show, whatever the kills. */
function expectSoundChain(dbPath: string): void {
  const generations = TICKS / EVERY;
  const ids = [RUN_ID, ...Array.from({ length: generations - 1 }, (_, i) => `${RUN_ID}~${i + 1}`)];
  expect(sql(dbPath, "SELECT run_id, status, next_run_id, continued_from_run_id FROM _smithers_runs ORDER BY created_at_ms, run_id")).toEqual(
    ids.map((id, i) => ({
      run_id: id,
      status: i === ids.length - 1 ? "finished" : "continued",
      next_run_id: ids[i + 1] ?? null,
      continued_from_run_id: ids[i - 1] ?? null,
    })),
  );
  // Every task finished exactly once across the chain, each loop iteration in the run it belongs to.
  expect(sql(dbPath, "SELECT run_id, node_id, iteration FROM _smithers_attempts WHERE state = 'finished' ORDER BY node_id, iteration")).toEqual([
    { run_id: RUN_ID, node_id: "setup", iteration: 0 },
    ...Array.from({ length: TICKS }, (_, i) => ({ run_id: ownerOf(i), node_id: "tick", iteration: i })),
  ]);
  // The loop state was never lost: each iteration's row exists, written by its own run (later runs hold a copy of the one before).
  expect(sql(dbPath, "SELECT n FROM tick GROUP BY n ORDER BY n").map((r) => (r as { n: number }).n)).toEqual(Array.from({ length: TICKS }, (_, i) => i));
  for (const [i, id] of ids.entries()) {
    const own = Array.from({ length: EVERY }, (_, k) => i * EVERY + k);
    const held = sql<{ n: number }>(dbPath, "SELECT n FROM tick WHERE run_id = ? ORDER BY n", id).map((r) => r.n);
    expect(held).toEqual(i === 0 ? own : [i * EVERY - 1, ...own]);
  }
  // Every execution of a body is recorded as an attempt (write before do): never more log lines than attempts.
  const calls = join(dirname(dbPath), "calls.txt");
  const lines = existsSync(calls) ? readFileSync(calls, "utf8").split("\n").filter(Boolean) : [];
  const attempts = sql<{ run_id: string; node_id: string; iteration: number; n: number }>(
    dbPath,
    "SELECT run_id, node_id, iteration, count(*) AS n FROM _smithers_attempts GROUP BY run_id, node_id, iteration",
  );
  for (const a of attempts) {
    const executed = lines.filter((l) => l === `${a.run_id} ${a.node_id} ${a.iteration}`).length;
    expect(executed).toBeLessThanOrEqual(a.n);
  }
  expect(new Set(lines.map((l) => l.split(" ").slice(1).join(" "))).size).toBe(TICKS + 1);
}

/** Resumes (killing as `plan` says) until a process exits 0; returns how many were killed. */
async function resumeUntilDone(dbPath: string, plan: () => Kill): Promise<number> {
  let kills = 0;
  for (let n = 0; n < MAX_PROCESSES; n++) {
    const l = await life(dbPath, true, plan());
    if (l.killed) kills++;
    else if (l.code === 0) return kills;
    else throw new Error(`a resume exited ${l.code}:\n${l.stdout}\n${l.stderr}`);
  }
  throw new Error(`not finished after ${MAX_PROCESSES} processes`);
}

test("smithers up follows the chain to its end: one line per continuation, then the last run's id and result, exit 0", async () => {
  const dbPath = tempDbPath();
  const l = await life(dbPath, false, "never");
  expect([l.code, l.stderr]).toEqual([0, ""]);
  expect(l.stdout.split("\n").filter((line) => line.startsWith("continue "))).toEqual([
    `continue run ${RUN_ID} continued as run ${RUN_ID}~1 (iter=2)`,
    `continue run ${RUN_ID}~1 continued as run ${RUN_ID}~2 (iter=4)`,
    `continue run ${RUN_ID}~2 continued as run ${RUN_ID}~3 (iter=6)`,
  ]);
  expect(l.stdout).toContain(`run ${RUN_ID}~3 finished\n{\n  "n": 7\n}`);
  expectSoundChain(dbPath);
}, 60_000);

test("kill -9 the moment a run continues: exactly one successor, the old run `continued`, and --resume of the first run finishes the chain", async () => {
  const dbPath = tempDbPath();

  const first = await life(dbPath, false, { marker: CONTINUED_MARKER });

  expect(first.killed).toBe(true);
  expect(sql(dbPath, "SELECT status, next_run_id FROM _smithers_runs WHERE run_id = ?", RUN_ID)).toEqual([{ status: "continued", next_run_id: `${RUN_ID}~1` }]);
  expect(sql(dbPath, "SELECT run_id FROM _smithers_runs WHERE continued_from_run_id = ?", RUN_ID)).toEqual([{ run_id: `${RUN_ID}~1` }]);
  // The successor was created with the loop where the old run left it.
  expect(sql(dbPath, "SELECT ralph_id, iteration, done FROM _smithers_ralph WHERE run_id = ?", `${RUN_ID}~1`)).toEqual([
    { ralph_id: "ticks", iteration: EVERY, done: 0 },
  ]);

  await resumeUntilDone(dbPath, () => "never");
  expectSoundChain(dbPath);
}, 60_000);

test("kill -9 at random moments across the chain, resuming the first run's id each time: the chain ends sound", async () => {
  const seed = Number(process.env.CONTINUE_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));
  const random = prng(seed);
  const dbPath = tempDbPath();
  // 30 %: right at a continuation; else 0-80 ms after the first progress line (anywhere in a run of two
  // short iterations). The first four processes are killed within 25 ms of it, so the chain cannot finish early.
  let planned = 0;
  const plan = (): Kill => {
    if (planned++ < 4) return { afterFirstOutputMs: Math.floor(random() * 25) };
    return random() < 0.3 ? { marker: "continue run" } : { afterFirstOutputMs: Math.floor(random() * 80) };
  };

  const start = await life(dbPath, false, plan());
  if (!start.killed) throw new Error(`seed ${seed}: the first process was not killed (exit ${start.code}):\n${start.stderr}`);
  const kills = 1 + (await resumeUntilDone(dbPath, plan));

  try {
    expect(kills).toBeGreaterThanOrEqual(4);
    expectSoundChain(dbPath);
  } catch (error) {
    throw new Error(`seed ${seed} (${kills} kills): ${(error as Error).message}`);
  }
}, 120_000);
