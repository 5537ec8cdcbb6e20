import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { openSmithersDb, runs } from "../../src/db/index.ts";
import { loadWorkflowFile, supervise } from "../../src/engine/index.ts";
import { SmithersError } from "../../src/errors/index.ts";
import { query, tempDbPath, tempDir } from "../helpers.ts";
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
    const callsFile = join(tempDir(), "calls.txt");
    await crashDuringB(dbPath, "run-s", callsFile);
    process.env.CALLS_FILE = callsFile;
    const later = () => Date.now() + 60_000; // the dead owner's heartbeat is now 60 s old
    const [one, two] = [openSmithersDb(dbPath), openSmithersDb(dbPath)];
    const outcomes = (await Promise.all([supervise({ db: one, now: later }), supervise({ db: two, now: later })])).flat();
    expect(outcomes.filter((o) => o.action === "resumed").map((o) => o.runId)).toEqual(["run-s"]);
    // The other lost the race: at the claim ("lost"), or, when it looked after the winner had claimed,
    // it finds the run owned by a live process here ("skipped"), as a busy machine makes likely.
    expect(outcomes.filter((o) => o.action !== "resumed" && o.action !== "lost" && !(o.action === "skipped" && /still running here/.test(o.reason)))).toEqual(
      [],
    );
    expect(lines(callsFile)).toEqual(["a", "b", "b", "c"]);
    expect(await query(dbPath, "SELECT node_id, COUNT(*) AS n FROM step GROUP BY node_id ORDER BY node_id")).toEqual([
      { node_id: "a", n: 1 },
      { node_id: "b", n: 1 },
      { node_id: "c", n: 1 },
    ]);
    expect(await query(dbPath, "SELECT status FROM _smithers_runs")).toEqual([{ status: "finished" }]);
    await one.close();
    await two.close();
  });

  test("a run whose owner still heartbeats is left alone", async () => {
    const dbPath = tempDbPath();
    const callsFile = join(tempDir(), "calls.txt");
    await crashDuringB(dbPath, "run-fresh", callsFile);
    const db = openSmithersDb(dbPath);
    expect(await supervise({ db })).toEqual([]); // heartbeat younger than 30 s
    expect(await query(dbPath, "SELECT status FROM _smithers_runs")).toEqual([{ status: "running" }]);
    await db.close();
  });

  test("a claimed run whose workflow cannot be loaded is released to its previous owner", async () => {
    const dbPath = tempDbPath();
    const callsFile = join(tempDir(), "calls.txt");
    await crashDuringB(dbPath, "run-r", callsFile);
    const db = openSmithersDb(dbPath);
    const before = await runs.getRun(db, "run-r");
    const outcomes = await supervise({ db, now: () => Date.now() + 60_000, resolveWorkflow: () => undefined });
    expect(outcomes).toEqual([{ runId: "run-r", action: "released", reason: "no workflow file is recorded for this run" }]);
    const after = await runs.getRun(db, "run-r");
    expect([after?.runtimeOwnerId, after?.heartbeatAtMs, after?.status]).toEqual([before?.runtimeOwnerId, before?.heartbeatAtMs, "running"]);
    await db.close();
  });

  test("a run whose heartbeat is late but whose owner process is alive here is skipped, not resumed beside it", async () => {
    const dbPath = tempDbPath();
    const callsFile = join(tempDir(), "calls.txt");
    const args = ["up", "test/fixtures/steps.tsx", "--input", '{"label":"s"}', "--db", dbPath, "--run-id", "run-busy"];
    const owner = await startUntil(args, { STEP_B: "block", BLOCK_MS: "2500", CALLS_FILE: callsFile }, "start   b");
    const pass = await smithersAsync(["supervise", "--db", dbPath, "--stale-after-ms", "0"], { CALLS_FILE: callsFile });
    expect(pass.stdout).toContain("skipped run-busy: its owner");
    const resume = await smithersAsync([...args, "--resume"], { CALLS_FILE: callsFile });
    expect(resume.code).toBe(2);
    expect(resume.stderr).toContain("RUN_STILL_RUNNING");
    expect(await owner.exited).toBe(0);
    expect(lines(callsFile)).toEqual(["a", "b", "c"]); // b ran once
    expect(await query(dbPath, "SELECT node_id, attempt, state FROM _smithers_attempts WHERE node_id = 'b'")).toEqual([
      { node_id: "b", attempt: 1, state: "finished" },
    ]);
  });

  test("a claimed run whose resume rejects is released to its previous owner, and the outcome says why", async () => {
    const dbPath = tempDbPath();
    const callsFile = join(tempDir(), "calls.txt");
    await crashDuringB(dbPath, "run-j", callsFile);
    const db = openSmithersDb(dbPath);
    const before = await runs.getRun(db, "run-j");
    const workflow = await loadWorkflowFile("test/fixtures/steps.tsx");
    // A workflow whose database cannot be opened: runWorkflow rejects after the claim was won.
    const broken = {
      ...workflow,
      dbFor: () => {
        throw new SmithersError("WORKFLOW_LOAD_FAILED", "no database for you");
      },
    };
    const outcomes = await supervise({ db, now: () => Date.now() + 60_000, resolveWorkflow: () => broken });
    expect(outcomes).toEqual([{ runId: "run-j", action: "released", reason: "WORKFLOW_LOAD_FAILED: no database for you" }]);
    const after = await runs.getRun(db, "run-j");
    expect([after?.runtimeOwnerId, after?.heartbeatAtMs, after?.status]).toEqual([before?.runtimeOwnerId, before?.heartbeatAtMs, "running"]);
    await db.close();
  });

  test("a task that kills its process is not resumed forever: after maxAbandons (3) process deaths the run fails with TASK_CRASH_LOOP", async () => {
    const dbPath = tempDbPath();
    const first = await smithersAsync(["up", "test/fixtures/crash-loop.tsx", "--db", dbPath, "--run-id", "run-loop"]);
    expect(first.code).not.toBe(0); // killed by its own task
    const passes: { code: number | null; stdout: string }[] = [];
    for (let i = 0; i < 3; i++) passes.push(await smithersAsync(["supervise", "--db", dbPath, "--stale-after-ms", "0"]));
    expect(passes.slice(0, 2).map((p) => p.stdout.includes("resumed"))).toEqual([false, false]); // each died with its task
    expect(passes[2]!.stdout).toContain("resumed run-loop failed TASK_CRASH_LOOP");
    expect(passes[2]!.code).toBe(1);
    expect(await query(dbPath, "SELECT node_id, attempt, state FROM _smithers_attempts ORDER BY node_id, attempt")).toEqual([
      { node_id: "doomed", attempt: 1, state: "abandoned" },
      { node_id: "doomed", attempt: 2, state: "abandoned" },
      { node_id: "doomed", attempt: 3, state: "abandoned" },
      { node_id: "first", attempt: 1, state: "finished" },
    ]);
    expect(await query(dbPath, "SELECT node_id, state FROM _smithers_nodes ORDER BY node_id")).toEqual([
      { node_id: "doomed", state: "failed" },
      { node_id: "first", state: "finished" },
    ]);
    const run = (await query<{ status: string; error_json: string }>(dbPath, "SELECT status, error_json FROM _smithers_runs"))[0]!;
    expect(run.status).toBe("failed");
    expect(JSON.parse(run.error_json)).toMatchObject({ code: "TASK_CRASH_LOOP", nodeId: "doomed", abandons: 3, maxAbandons: 3 });
    const events = await query<{ type: string; payload_json: string }>(
      dbPath,
      "SELECT type, payload_json FROM _smithers_events WHERE type IN ('NodeAbandoned', 'RunFailed') ORDER BY seq",
    );
    expect(events.map((e) => [e.type, JSON.parse(e.payload_json).reason ?? JSON.parse(e.payload_json).error.code])).toEqual([
      ["NodeAbandoned", "process-died"],
      ["NodeAbandoned", "process-died"],
      ["NodeAbandoned", "process-died"],
      ["RunFailed", "TASK_CRASH_LOOP"],
    ]);
    // Nothing is stale any more: a further pass leaves the failed run alone.
    expect((await smithersAsync(["supervise", "--db", dbPath, "--stale-after-ms", "0"])).stdout).toContain("no stale runs");
  });

  test("maxAbandons={1} fails at the first process death; resuming the failed run gives the task a fresh budget", async () => {
    const dbPath = tempDbPath();
    const env = { MAX_ABANDONS: "1" };
    await smithersAsync(["up", "test/fixtures/crash-loop.tsx", "--db", dbPath, "--run-id", "run-one"], env);
    const pass = await smithersAsync(["supervise", "--db", dbPath, "--stale-after-ms", "0"], env);
    expect(pass.stdout).toContain("resumed run-one failed TASK_CRASH_LOOP");
    const again = await smithersAsync(["up", "test/fixtures/crash-loop.tsx", "--db", dbPath, "--run-id", "run-one", "--resume"], env);
    expect(again.code).not.toBe(1); // it ran the task again, which killed the process again
    expect(await query(dbPath, "SELECT attempt, state FROM _smithers_attempts WHERE node_id = 'doomed' ORDER BY attempt")).toEqual([
      { attempt: 1, state: "abandoned" },
      { attempt: 2, state: "running" },
    ]);
  });

  test("two `smithers supervise` processes started together: one resumes the run, the other finds nothing to do", async () => {
    const dbPath = tempDbPath();
    const callsFile = join(tempDir(), "calls.txt");
    await crashDuringB(dbPath, "run-p", callsFile);
    await Bun.sleep(1_100); // older than --stale-after-ms 1000
    const args = ["supervise", "--db", dbPath, "--stale-after-ms", "1000"];
    const results = await Promise.all([smithersAsync(args, { CALLS_FILE: callsFile }), smithersAsync(args, { CALLS_FILE: callsFile })]);
    // The loser either found the run already claimed (not stale any more) or lost the CAS; never "released".
    const outcomes = results.flatMap((r) => r.stdout.split("\n").filter((l) => /^(resumed|released|lost|no stale runs)/.test(l)));
    expect(outcomes.map((l) => (l.startsWith("lost run-p") ? "no stale runs, no due waits, no due cron slots" : l)).sort()).toEqual([
      "no stale runs, no due waits, no due cron slots",
      "resumed run-p finished",
    ]);
    expect(results.map((r) => r.code)).toEqual([0, 0]);
    expect(lines(callsFile)).toEqual(["a", "b", "b", "c"]);
    expect(await query(dbPath, "SELECT node_id, attempt, state FROM _smithers_attempts ORDER BY node_id, attempt")).toEqual([
      { node_id: "a", attempt: 1, state: "finished" },
      { node_id: "b", attempt: 1, state: "abandoned" },
      { node_id: "b", attempt: 2, state: "finished" },
      { node_id: "c", attempt: 1, state: "finished" },
    ]);
  });
});
