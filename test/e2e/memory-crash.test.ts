/**
 * Retained digests survive kill -9 at random moments: `smithers up test/fixtures/memory-crash.tsx`
 * is killed and resumed until it finishes by itself. Then every task has exactly one digest in
 * `_smithers_vectors`, under its key, holding the very output row the task committed: the digest
 * and the output were written in one transaction, so neither exists without the other. The seed is
 * printed; re-run one with MEMORY_CRASH_SEED=<seed>.
 */
import { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { STEPS } from "../fixtures/memory-crash.tsx";
import { prng, tempDbPath } from "../helpers.ts";
import { lifeUntilKilled } from "./cli-helpers.ts";

const FIXTURE = "test/fixtures/memory-crash.tsx";
const MIN_KILLS = 6;
const MAX_PROCESSES = 60;

function query<T>(dbPath: string, text: string): T[] {
  if (!existsSync(dbPath)) return [];
  const db = new Database(dbPath, { readonly: true });
  try {
    return db.query(text).all() as T[];
  } catch {
    return []; // killed before the tables were created
  } finally {
    db.close();
  }
}

/** One life of `smithers up` (see lifeUntilKilled), resuming the run once it exists. */
function life(dbPath: string, delayMs: number): Promise<number | null> {
  const resume = query(dbPath, "SELECT 1 FROM _smithers_runs WHERE run_id = 'm'").length > 0 ? ["--resume"] : [];
  return lifeUntilKilled(["up", FIXTURE, "--db", dbPath, "--run-id", "m", ...resume], delayMs);
}

test("kill -9 while tasks retain: each task ends with exactly one digest, of the output row it committed", async () => {
  const seed = Number(process.env.MEMORY_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 32));
  console.log(`memory-crash seed ${seed}`);
  const random = prng(seed);
  const dbPath = tempDbPath();
  let kills = 0;
  let finished = false;
  for (let i = 0; i < MAX_PROCESSES && !finished; i++) {
    const code = await life(dbPath, kills < MIN_KILLS ? Math.floor(random() * 60) : 60_000);
    if (code === null) kills++;
    finished = code === 0;
  }
  expect({ seed, finished, kills: kills >= MIN_KILLS }).toEqual({ seed, finished: true, kills: true });
  const outputs = query<{ node_id: string; value: string }>(dbPath, "SELECT node_id, value FROM out WHERE run_id = 'm' ORDER BY node_id");
  const digests = query<{ id: string; content: string }>(dbPath, "SELECT id, content FROM _smithers_vectors WHERE namespace = 'notes' ORDER BY id");
  expect(outputs.map((o) => o.node_id)).toEqual([...STEPS].sort());
  expect(digests.map((d) => d.id)).toEqual(outputs.map((o) => `m:${o.node_id}:0`));
  for (const [i, o] of outputs.entries()) {
    expect(digests[i]!.content).toBe(`Task "${o.node_id}" of workflow "memory-crash" produced: ${JSON.stringify({ value: o.value })}`);
  }
});
