/**
 * Cached tasks survive kill -9 at random moments: `smithers up test/fixtures/cache-crash.tsx` is
 * killed and resumed until it finishes by itself. Then every cache entry matches the output rows
 * it was stored with, every node has its one row, the run-scoped task's iterations all carry the
 * row of the execution that was cached, and a second run reuses every workflow-scoped entry
 * without running those bodies. The seed is printed; re-run one with CACHE_CRASH_SEED=<seed>.
 */
import { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { ROUNDS, STEPS } from "../fixtures/cache-crash.tsx";
import { prng, tempDbPath } from "../helpers.ts";
import { lifeUntilKilled, smithers } from "./cli-helpers.ts";

const FIXTURE = "test/fixtures/cache-crash.tsx";
const INPUT = '{"label":"k9"}';
const MIN_KILLS = 8;
const MAX_PROCESSES = 80;

function query<T>(dbPath: string, text: string, ...params: string[]): T[] {
  if (!existsSync(dbPath)) return [];
  const db = new Database(dbPath, { readonly: true });
  try {
    return db.query(text).all(...params) as T[];
  } catch {
    return []; // killed before the tables were created
  } finally {
    db.close();
  }
}

const runExists = (dbPath: string, runId: string) => query(dbPath, "SELECT 1 FROM _smithers_runs WHERE run_id = ?", runId).length > 0;

/** One life of `smithers up` (see lifeUntilKilled), resuming the run once it exists. */
function life(dbPath: string, runId: string, delayMs: number, env: Record<string, string>): Promise<number | null> {
  const args = ["up", FIXTURE, "--db", dbPath, "--run-id", runId, "--input", INPUT, ...(runExists(dbPath, runId) ? ["--resume"] : [])];
  return lifeUntilKilled(args, delayMs, env);
}

test("kill -9 while cached tasks run: entries and output rows always agree, and a second run reuses every workflow-scoped entry", async () => {
  const seed = Number(process.env.CACHE_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 32));
  console.log(`cache-crash seed ${seed}`);
  const random = prng(seed);
  const dbPath = tempDbPath();
  const execFile = join(dirname(dbPath), "exec.log");
  const env = { CACHE_EXEC_FILE: execFile };
  let kills = 0;
  let finished = false;
  for (let i = 0; i < MAX_PROCESSES && !finished; i++) {
    // Until MIN_KILLS, every life is cut short somewhere in the workflow; then one runs to the end.
    const delayMs = kills < MIN_KILLS ? Math.floor(random() * 40) : 60_000;
    const code = await life(dbPath, "first", delayMs, env);
    if (code === null) kills++;
    finished = code === 0;
  }
  expect({ seed, finished, kills: kills >= MIN_KILLS }).toEqual({ seed, finished: true, kills: true });

  type Row = { node_id: string; iteration: number; value: string };
  const rows = query<Row>(dbPath, "SELECT node_id, iteration, value FROM out WHERE run_id = 'first' ORDER BY node_id, iteration");
  const expected = [...STEPS.map((id) => `${id}#0`), ...["plain", "shared"].flatMap((id) => Array.from({ length: ROUNDS }, (_, i) => `${id}#${i}`))].sort();
  expect(rows.map((r) => `${r.node_id}#${r.iteration}`).sort()).toEqual(expected);

  // Each entry holds exactly the row of the task that stored it.
  const entries = query<{ node_id: string; payload_json: string }>(dbPath, "SELECT node_id, payload_json FROM _smithers_cache ORDER BY node_id");
  expect(entries.map((e) => e.node_id)).toEqual(["shared", ...STEPS].sort());
  const firstRunValue = (nodeId: string, iteration = 0) => rows.find((r) => r.node_id === nodeId && r.iteration === iteration)?.value;
  for (const e of entries)
    expect({ node: e.node_id, payload: JSON.parse(e.payload_json) }).toEqual({ node: e.node_id, payload: { value: firstRunValue(e.node_id) } });
  // Later iterations of the run-scoped task were copied from the entry, never computed again.
  expect(new Set(rows.filter((r) => r.node_id === "shared").map((r) => r.value)).size).toBe(1);
  const attempts = query<{ node_id: string; iteration: number; cached: number }>(
    dbPath,
    "SELECT node_id, iteration, cached FROM _smithers_attempts WHERE run_id = 'first' AND state = 'finished'",
  );
  expect(attempts.filter((a) => a.cached === 1).every((a) => a.node_id === "shared" && a.iteration > 0)).toBe(true);

  // A second run: every cached step is a hit (no body runs for them), the run-scoped task runs once.
  const second = smithers(["up", FIXTURE, "--db", dbPath, "--run-id", "second", "--input", INPUT], env);
  expect(second.code).toBe(0);
  const ran = readFileSync(execFile, "utf8")
    .split("\n")
    .filter((l) => l.startsWith("second:"))
    .map((l) => l.slice("second:".length))
    .sort();
  expect(ran).toEqual(["plain:0", "plain:1", "plain:2", "plain:3", "shared:0"]);
  const secondSteps = query<{ node_id: string; value: string }>(dbPath, "SELECT node_id, value FROM out WHERE run_id = 'second' AND node_id LIKE 'step-%'");
  expect(secondSteps.every((r) => r.value === firstRunValue(r.node_id))).toBe(true);
}, 120_000);
