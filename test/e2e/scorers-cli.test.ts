/**
 * Scorers across processes: `smithers up` is killed (SIGKILL) while a scorer runs after the run
 * finished, which leaves its row pending; `smithers up --resume` scores it; `smithers scores`
 * prints it (a table, --json, RUN_NOT_FOUND for an unknown run).
 */
import { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { tempDbPath, waitFor } from "../helpers.ts";
import { cli, root, smithers } from "./cli-helpers.ts";

const FIXTURE = "test/fixtures/scorers-crash.tsx";

function query<T>(dbPath: string, text: string): T[] {
  const db = new Database(dbPath, { readonly: true });
  try {
    return db.query(text).all() as T[];
  } finally {
    db.close();
  }
}

test("kill -9 while a scorer runs leaves its row pending with the run finished; the next process that loads the run scores it", async () => {
  const dbPath = tempDbPath();
  const marker = join(dirname(dbPath), "scorer-started");
  const proc = Bun.spawn([process.execPath, cli, "up", FIXTURE, "--db", dbPath, "--run-id", "r"], {
    cwd: root,
    env: { ...process.env, SCORER_HANG: "1", SCORER_MARKER: marker },
    stdout: "ignore",
    stderr: "pipe",
  });
  await waitFor(() => existsSync(marker), 15_000);
  expect(query(dbPath, "SELECT status FROM _smithers_runs")).toEqual([{ status: "finished" }]);
  proc.kill("SIGKILL");
  await proc.exited;
  expect(proc.signalCode).toBe("SIGKILL");
  expect(query(dbPath, "SELECT node_id, scorer_id, status, score FROM _smithers_scorers")).toEqual([
    { node_id: "work", scorer_id: "judge", status: "pending", score: null },
  ]);

  const resumed = smithers(["up", "--resume", "--run-id", "r", "--db", dbPath]);
  expect(resumed.code).toBe(0);
  expect(query(dbPath, "SELECT status, score, reason, error FROM _smithers_scorers")).toEqual([
    { status: "scored", score: 0.5, reason: "scored by the next process", error: null },
  ]);
  expect(query(dbPath, "SELECT status FROM _smithers_runs")).toEqual([{ status: "finished" }]);

  const table = smithers(["scores", "r", "--db", dbPath]);
  expect(table.code).toBe(0);
  const lines = table.stdout.trim().split("\n");
  expect(lines[0]).toMatch(/^NODE\s+ITER\s+ATTEMPT\s+SCORER\s+STATUS\s+SCORE/);
  expect(lines[1]).toMatch(/^work\s+0\s+1\s+Judge \(judge\)\s+scored\s+0\.5\s.*scored by the next process$/);
  expect(lines.find((l) => l.startsWith("SCORER"))).toMatch(/^SCORER\s+SCORED\s+MEAN\s+MIN\s+MAX\s+PENDING\s+ERRORS$/);
  expect(lines.find((l) => l.startsWith("judge"))).toMatch(/^judge\s+1\s+0\.5\s+0\.5\s+0\.5\s+0\s+0$/);

  const json = JSON.parse(smithers(["scores", "r", "--json", "--node", "work", "--db", dbPath]).stdout);
  expect(json).toMatchObject({
    runId: "r",
    scores: [{ nodeId: "work", attempt: 1, scorerId: "judge", status: "scored", score: 0.5 }],
    summary: [{ scorerId: "judge", scorerName: "Judge", scored: 1, mean: 0.5, min: 0.5, max: 0.5, pending: 0, errors: 0 }],
  });
  const unknown = smithers(["scores", "nope", "--db", dbPath]);
  expect(unknown.code).toBe(2);
  expect(unknown.stderr).toContain("RUN_NOT_FOUND");
});
