/**
 * Three `smithers worker` processes share one database (a SQLite file, then PostgreSQL) and 12
 * queued runs whose task holds the concurrencyKey "shared" (limit 2). One worker is SIGKILLed while
 * it holds a slot. From the tasks' own start and end (and, for the killed body, its start and the
 * kill), never more than 2 ran at once; every run finished; the dead worker's slot was taken back
 * (its run finished elsewhere) and no body ran twice for one attempt.
 */
import { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join, resolve } from "node:path";
import { runWorkflow } from "../../src/engine/index.ts";
import keyed from "../fixtures/keyed.tsx";
import { tempDbPath } from "../helpers.ts";
import { connectPg, pgTestServer } from "../support/postgres.ts";
import { cli, root } from "./cli-helpers.ts";

const RUNS = 12;
const KEYED = resolve("test/fixtures/keyed.tsx");

type Rows = (text: string) => Promise<Record<string, unknown>[]>;

/** The most spans open at one time (an end and a start in the same ms do not overlap). */
function maxOverlap(spans: readonly { start: number; end: number }[]): number {
  const edges = spans.flatMap((s) => [
    { at: s.start, d: 1 },
    { at: s.end, d: -1 },
  ]);
  edges.sort((a, b) => a.at - b.at || a.d - b.d);
  let open = 0;
  let most = 0;
  for (const e of edges) most = Math.max(most, (open += e.d));
  return most;
}

async function pool(target: string, rows: Rows): Promise<void> {
  const execFile = join(resolve(tempDbPath(), ".."), `exec-${Bun.hash(target)}.log`);
  writeFileSync(execFile, "");
  const ids = Array.from({ length: RUNS }, (_, i) => `k${String(i).padStart(2, "0")}`);
  for (const runId of ids) await runWorkflow(keyed, { enqueue: true, workflowPath: KEYED, dbPath: target, runId, input: {} });
  const env = { ...process.env, KEYED_EXEC_FILE: execFile, KEYED_PAUSE_MS: "400" };
  const args = ["worker", "--db", target, "--concurrency", "4", "--lease", "1s", "--poll-interval", "100ms", "--quiet"];
  const workers = Array.from({ length: 3 }, () => Bun.spawn([process.execPath, cli, ...args], { cwd: root, env, stdout: "pipe", stderr: "pipe" }));
  const logs = workers.map((w) => Promise.all([new Response(w.stdout).text(), new Response(w.stderr).text()]));
  const count = async (text: string) => Number((await rows(text))[0]!.n);
  try {
    const deadline = Date.now() + 60_000;
    let killedAt: number | undefined;
    let victim: (typeof workers)[number] | undefined;
    while ((await count("SELECT count(*) AS n FROM _smithers_runs WHERE status = 'finished'")) < RUNS) {
      if (Date.now() > deadline) throw new Error("timed out waiting for the runs to finish");
      if (killedAt === undefined) {
        // The first worker seen holding a slot for a body that runs now is killed.
        const holders = await rows(
          `SELECT s.owner_id FROM _smithers_slots s JOIN _smithers_attempts a ON a.run_id = s.run_id AND a.node_id = s.node_id AND a.state = 'running'
           WHERE s.state = 'held' AND s.owner_id LIKE '${hostname()}:%'`,
        );
        const pids = new Set(holders.map((h) => Number(String(h.owner_id).split(":")[1])));
        victim = workers.find((w) => pids.has(w.pid));
        if (victim) {
          victim.kill("SIGKILL");
          await victim.exited;
          killedAt = Date.now();
        }
      }
      await Bun.sleep(20);
    }
    expect(killedAt).toBeDefined();
    expect(await rows("SELECT DISTINCT status FROM _smithers_runs")).toEqual([{ status: "finished" }]);
    const spans = (await rows(`SELECT run_id, start, "end" FROM span`)).map((r) => ({ runId: String(r.run_id), start: Number(r.start), end: Number(r.end) }));
    expect(spans.map((s) => s.runId).sort()).toEqual(ids);

    // Every body execution once per attempt; the killed worker's bodies were abandoned, and their runs finished elsewhere.
    const lines = readFileSync(execFile, "utf8").trim().split("\n");
    const executions = lines.map((line) => line.split(" "));
    expect(new Set(executions.map(([runId, attempt]) => `${runId} ${attempt}`)).size).toBe(lines.length);
    const attempts = await rows("SELECT run_id, attempt, state FROM _smithers_attempts");
    const abandoned = attempts.filter((a) => a.state === "abandoned");
    expect(abandoned.length).toBeGreaterThan(0);
    for (const a of attempts) expect(["finished", "abandoned"]).toContain(String(a.state));
    expect(attempts.filter((a) => a.state === "finished").length).toBe(RUNS);
    const finishedKeys = new Set(spans.map((s) => s.runId));
    for (const a of abandoned) expect(finishedKeys.has(String(a.run_id))).toBe(true);

    // The killed bodies ran from their start until the kill. An attempt the kill caught after its
    // start was recorded but before its body wrote its line never ran a body: nothing to overlap.
    const killedSpans = abandoned.flatMap((a) => {
      const line = executions.find(([runId, attempt]) => runId === a.run_id && Number(attempt) === Number(a.attempt));
      return line ? [{ start: Number(line[2]), end: killedAt! }] : [];
    });
    expect(maxOverlap([...spans, ...killedSpans])).toBeLessThanOrEqual(2);
    expect(maxOverlap(spans)).toBe(2); // the pool did use both slots
    expect(await count("SELECT count(*) AS n FROM _smithers_slots")).toBe(0);
    const survivors = workers.filter((w) => w !== victim);
    for (const w of survivors) w.kill("SIGTERM");
    expect(await Promise.all(survivors.map((w) => w.exited))).toEqual([0, 0]);
  } finally {
    for (const w of workers) w.kill("SIGTERM");
    const codes = await Promise.all(workers.map((w) => w.exited));
    if (codes.filter((c) => c !== 0).length > 1) console.error((await Promise.all(logs)).map(([o, e]) => `${o}\n${e}`).join("\n---\n"));
  }
}

test("3 workers on one SQLite file keep a concurrencyKey's limit of 2 across processes, and take back the slot of a SIGKILLed one", async () => {
  const dbPath = tempDbPath();
  await pool(dbPath, async (text) => {
    const db = new Database(dbPath, { readonly: true });
    try {
      return db.query(text).all() as Record<string, unknown>[];
    } finally {
      db.close();
    }
  });
}, 90_000);

const pg = await pgTestServer();

test.skipIf(!pg)(
  "3 workers on one PostgreSQL database keep a concurrencyKey's limit of 2 across processes, and take back the slot of a SIGKILLed one",
  async () => {
    const url = await pg!.createDatabase();
    const sql = connectPg(url);
    try {
      await pool(url, async (text) => [...(await sql.unsafe(text))] as Record<string, unknown>[]);
    } finally {
      await sql.end();
    }
  },
  90_000,
);
