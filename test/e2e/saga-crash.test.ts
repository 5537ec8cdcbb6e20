/**
 * A saga killed with SIGKILL in the middle of each of its compensations, then resumed each time
 * (`smithers up --resume`, real processes): the compensations run last step first, each undone
 * step has exactly one output row, a compensation that finished never runs again, and no forward
 * action runs again once the saga unwinds. The second test kills at random moments (start-up,
 * actions, compensations, commits); its seed is named in every failure and replayed with
 *   SAGA_CRASH_SEED=<seed> bun test test/e2e/saga-crash.test.ts
 */
import { expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { prng, tempDbPath } from "../helpers.ts";
import { cli, root } from "./cli-helpers.ts";

const FIXTURE = "test/fixtures/saga-crash.tsx";
const RUN_ID = "saga";
/** A process that neither printed the awaited line nor exited in this long is hung. */
const WATCHDOG_MS = 20_000;

const lines = (file: string) => (existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : []);

/** Runs `smithers up` (resuming when asked) until `killAt` appears in the log (then SIGKILL) or it exits. */
async function life(dbPath: string, log: string, resume: boolean, killAt?: string): Promise<{ code: number | null; killed: boolean; stderr: string }> {
  const args = ["up", FIXTURE, "--db", dbPath, "--run-id", RUN_ID, ...(resume ? ["--resume"] : [])];
  const proc = Bun.spawn([process.execPath, cli, ...args], { cwd: root, env: { ...process.env, SAGA_LOG: log }, stdout: "ignore", stderr: "pipe" });
  const stderr = new Response(proc.stderr).text();
  const deadline = Date.now() + WATCHDOG_MS;
  let exited = false;
  void proc.exited.then(() => (exited = true));
  while (!exited && Date.now() < deadline) {
    if (killAt && lines(log).includes(killAt)) break;
    await Bun.sleep(5);
  }
  if (!exited) proc.kill("SIGKILL");
  await proc.exited;
  return { code: proc.exitCode, killed: proc.signalCode === "SIGKILL", stderr: await stderr };
}

test("a saga killed during each compensation and resumed undoes every completed step once, last first, and never runs an action again", async () => {
  const dbPath = tempDbPath();
  const log = join(dirname(dbPath), "saga.log");
  // Each kill lands while a compensation's first attempt is working.
  for (const [i, killAt] of ["start release-3 1", "start release-2 1", "start release-1 1"].entries()) {
    const l = await life(dbPath, log, i > 0, killAt);
    expect(l.killed, `kill at "${killAt}" (stderr: ${l.stderr})`).toBe(true);
  }
  const last = await life(dbPath, log, true);
  expect([last.code, last.killed], last.stderr).toEqual([0, false]);

  const seen = lines(log);
  // Forward: each action ran once, the deploy failed once; nothing ran forward after that.
  for (const node of ["provision-1", "provision-2", "provision-3", "deploy"])
    expect(seen.filter((l) => l.startsWith(`start ${node} `))).toEqual([`start ${node} 1`]);
  expect(seen.some((l) => l.includes("undeploy"))).toBe(false);
  // Backward: each release killed once mid-body, then finished on its second attempt, strictly one after another, last step first.
  const backward = seen.slice(seen.indexOf("start release-3 1"));
  expect(backward).toEqual([
    "start release-3 1",
    "start release-3 2",
    "end release-3 2",
    "start release-2 1",
    "start release-2 2",
    "end release-2 2",
    "start release-1 1",
    "start release-1 2",
    "end release-1 2",
  ]);

  const db = new Database(dbPath, { readonly: true });
  try {
    expect(db.query("SELECT status, error_json FROM _smithers_runs").all()).toEqual([{ status: "finished", error_json: null }]);
    expect(db.query("SELECT node_id, state FROM _smithers_nodes ORDER BY node_id").all()).toEqual([
      { node_id: "deploy", state: "failed" },
      ...["provision-1", "provision-2", "provision-3", "release-1", "release-2", "release-3"].map((node_id) => ({ node_id, state: "finished" })),
    ]);
    expect(db.query("SELECT node_id, attempt, state FROM _smithers_attempts WHERE node_id LIKE 'release-%' ORDER BY node_id, attempt").all()).toEqual(
      ["release-1", "release-2", "release-3"].flatMap((node_id) => [
        { node_id, attempt: 1, state: "abandoned" },
        { node_id, attempt: 2, state: "finished" },
      ]),
    );
    // One row per undone step, written by the attempt that finished, with the step's stable idempotency key.
    expect(db.query("SELECT node_id, attempt, key FROM change WHERE node_id LIKE 'release-%' ORDER BY node_id").all()).toEqual(
      ["release-1", "release-2", "release-3"].map((node_id) => ({ node_id, attempt: 2, key: `${RUN_ID}:${node_id}:0` })),
    );
  } finally {
    db.close();
  }
}, 90_000);

/** Whether the run row exists (a kill during start-up may land before it is committed: then the next life starts it). */
function runExists(dbPath: string): boolean {
  if (!existsSync(dbPath)) return false;
  try {
    const db = new Database(dbPath, { readonly: true });
    try {
      return db.query("SELECT 1 FROM _smithers_runs WHERE run_id = ?").get(RUN_ID) !== null;
    } finally {
      db.close();
    }
  } catch {
    return false; // killed before the tables were created
  }
}

/** Runs `smithers up` and SIGKILLs it `afterMs` after the spawn unless it exited first. */
async function lifeFor(dbPath: string, log: string, resume: boolean, afterMs: number): Promise<number | null> {
  const args = ["up", FIXTURE, "--db", dbPath, "--run-id", RUN_ID, ...(resume ? ["--resume"] : [])];
  const proc = Bun.spawn([process.execPath, cli, ...args], {
    cwd: root,
    env: { ...process.env, SAGA_LOG: log, SAGA_PAUSE_MS: "40" },
    stdout: "ignore",
    stderr: "ignore",
  });
  const timer = setTimeout(() => proc.kill("SIGKILL"), afterMs);
  await proc.exited;
  clearTimeout(timer);
  return proc.signalCode === "SIGKILL" ? null : proc.exitCode;
}

test("killed at random moments and resumed until it ends, the saga still undoes each completed step exactly once, last first", async () => {
  const seed = Number(process.env.SAGA_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 32));
  const random = prng(seed);
  const dbPath = tempDbPath();
  const log = join(dirname(dbPath), "saga.log");
  let code: number | null = null;
  let kills = 0;
  // Process start-up takes a few hundred ms, the saga about as long again: kills land in both.
  for (let life = 0; code === null; life++) {
    expect(life, `seed ${seed}: the run does not converge`).toBeLessThan(40);
    code = await lifeFor(dbPath, log, runExists(dbPath), life < 12 ? 60 + Math.floor(random() * 360) : WATCHDOG_MS);
    if (code === null) kills++;
  }
  expect(code, `seed ${seed}`).toBe(0);
  expect(kills, `seed ${seed}`).toBeGreaterThan(0);
  const seen = lines(log);
  const firstRelease = seen.findIndex((l) => l.startsWith("start release-"));
  // Once the saga unwinds nothing runs forward again, and the releases finish last step first.
  expect(
    seen.slice(firstRelease).filter((l) => !l.includes(" release-")),
    `seed ${seed}`,
  ).toEqual([]);
  const ends = seen.filter((l) => l.startsWith("end release-")).map((l) => l.split(" ")[1]);
  expect([...new Set(ends)], `seed ${seed}`).toEqual(["release-3", "release-2", "release-1"]);
  const db = new Database(dbPath, { readonly: true });
  try {
    expect(db.query("SELECT status FROM _smithers_runs").all()).toEqual([{ status: "finished" }]);
    expect(db.query("SELECT node_id, count(*) AS n FROM change GROUP BY node_id ORDER BY node_id").all(), `seed ${seed}`).toEqual(
      ["provision-1", "provision-2", "provision-3", "release-1", "release-2", "release-3"].map((node_id) => ({ node_id, n: 1 })),
    );
    // A finished node has exactly one finished attempt: nothing that finished ran again.
    expect(db.query("SELECT node_id FROM _smithers_attempts WHERE state = 'finished' GROUP BY node_id HAVING count(*) > 1").all(), `seed ${seed}`).toEqual([]);
  } finally {
    db.close();
  }
}, 120_000);
