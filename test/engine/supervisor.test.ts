import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { openSmithersDb, runs } from "../../src/db/index.ts";
import { supervise } from "../../src/engine/index.ts";
import { sql, tempDbPath } from "../helpers.ts";
import { smithersAsync, startUntil } from "../e2e/cli-helpers.ts";

/** Leaves run `runId` as a dead process does: `running`, its task b half-done, nobody heartbeating. */
async function crashDuringB(dbPath: string, runId: string, callsFile: string) {
  const args = ["up", "test/fixtures/steps.tsx", "--input", '{"label":"s"}', "--db", dbPath, "--run-id", runId];
  const proc = await startUntil(args, { STEP_B: "hang", CALLS_FILE: callsFile }, "start   b");
  for (let i = 0; i < 500 && !(existsSync(callsFile) && readFileSync(callsFile, "utf8").includes("b\n")); i++) await Bun.sleep(10);
  proc.kill("SIGKILL");
  await proc.exited;
}

const lines = (file: string) => readFileSync(file, "utf8").trim().split("\n");

afterEach(() => {
  delete process.env.CALLS_FILE;
});

describe("supervise", () => {
  test("two supervisors racing for the same stale run: exactly one claims and resumes it", async () => {
    const dbPath = tempDbPath();
    const callsFile = join(dirname(dbPath), "calls.txt");
    await crashDuringB(dbPath, "run-s", callsFile);
    process.env.CALLS_FILE = callsFile;
    const later = () => Date.now() + 60_000; // the dead owner's heartbeat is now 60 s old
    const [one, two] = [openSmithersDb(dbPath), openSmithersDb(dbPath)];
    const outcomes = (await Promise.all([supervise({ db: one, now: later }), supervise({ db: two, now: later })])).flat();
    expect(outcomes.filter((o) => o.action === "resumed").map((o) => o.runId)).toEqual(["run-s"]);
    expect(outcomes.filter((o) => o.action !== "resumed" && o.action !== "lost")).toEqual([]);
    expect(lines(callsFile)).toEqual(["a", "b", "b", "c"]);
    expect(sql(dbPath, "SELECT node_id, COUNT(*) AS n FROM step GROUP BY node_id ORDER BY node_id")).toEqual([
      { node_id: "a", n: 1 },
      { node_id: "b", n: 1 },
      { node_id: "c", n: 1 },
    ]);
    expect(sql(dbPath, "SELECT status FROM _smithers_runs")).toEqual([{ status: "finished" }]);
    await one.close();
    await two.close();
  });

  test("a run whose owner still heartbeats is left alone", async () => {
    const dbPath = tempDbPath();
    const callsFile = join(dirname(dbPath), "calls.txt");
    await crashDuringB(dbPath, "run-fresh", callsFile);
    const db = openSmithersDb(dbPath);
    expect(await supervise({ db })).toEqual([]); // heartbeat younger than 30 s
    expect(sql(dbPath, "SELECT status FROM _smithers_runs")).toEqual([{ status: "running" }]);
    await db.close();
  });

  test("a claimed run whose workflow cannot be loaded is released to its previous owner", async () => {
    const dbPath = tempDbPath();
    const callsFile = join(dirname(dbPath), "calls.txt");
    await crashDuringB(dbPath, "run-r", callsFile);
    const db = openSmithersDb(dbPath);
    const before = await runs.getRun(db, "run-r");
    const outcomes = await supervise({ db, now: () => Date.now() + 60_000, resolveWorkflow: () => undefined });
    expect(outcomes).toEqual([{ runId: "run-r", action: "released", reason: "no workflow file is recorded for this run" }]);
    const after = await runs.getRun(db, "run-r");
    expect([after?.runtimeOwnerId, after?.heartbeatAtMs, after?.status]).toEqual([before?.runtimeOwnerId, before?.heartbeatAtMs, "running"]);
    await db.close();
  });

  test("two `smithers supervise` processes started together: one resumes the run, the other finds nothing to do", async () => {
    const dbPath = tempDbPath();
    const callsFile = join(dirname(dbPath), "calls.txt");
    await crashDuringB(dbPath, "run-p", callsFile);
    await Bun.sleep(1_100); // older than --stale-after-ms 1000
    const args = ["supervise", "--db", dbPath, "--stale-after-ms", "1000"];
    const results = await Promise.all([smithersAsync(args, { CALLS_FILE: callsFile }), smithersAsync(args, { CALLS_FILE: callsFile })]);
    // The loser either found the run already claimed (not stale any more) or lost the CAS; never "released".
    const outcomes = results.flatMap((r) => r.stdout.split("\n").filter((l) => /^(resumed|released|lost|no stale runs)/.test(l)));
    expect(outcomes.map((l) => (l.startsWith("lost run-p") ? "no stale runs" : l)).sort()).toEqual(["no stale runs", "resumed run-p finished"]);
    expect(results.map((r) => r.code)).toEqual([0, 0]);
    expect(lines(callsFile)).toEqual(["a", "b", "b", "c"]);
    expect(sql(dbPath, "SELECT node_id, attempt, state FROM _smithers_attempts ORDER BY node_id, attempt")).toEqual([
      { node_id: "a", attempt: 1, state: "finished" },
      { node_id: "b", attempt: 1, state: "abandoned" },
      { node_id: "b", attempt: 2, state: "finished" },
      { node_id: "c", attempt: 1, state: "finished" },
    ]);
  });
});
