/**
 * Two real `smithers supervise` processes, started together on one database that holds every kind
 * of wake at once: due timers, decided approvals (by the API and by the CLI), a sent signal and a
 * due cron slot. Each is acted on by exactly one of them.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { openSmithersDb } from "../../src/db/index.ts";
import { addCron, approve, loadWorkflowFile, runWorkflow, sendSignal } from "../../src/engine/index.ts";
import { sql, tempDbPath } from "../helpers.ts";
import { cli, root, smithers } from "./cli-helpers.ts";

const fixture = resolve(import.meta.dir, "../fixtures/daemon-waits.tsx");
const startBarrier = resolve(import.meta.dir, "../fixtures/start-barrier.ts");

/**
 * Starts two `smithers supervise` processes (one pass each) on `dbPath` and lets them go at the
 * same moment, once both have loaded their modules (test/fixtures/start-barrier.ts); resolves
 * once both exited.
 */
async function twoDaemons(dbPath: string) {
  const barrier = join(dirname(dbPath), "go");
  const env = { ...process.env, START_BARRIER: barrier, WARM_WORKFLOW: fixture };
  const procs = [0, 1].map(() =>
    Bun.spawn([process.execPath, "--preload", startBarrier, cli, "supervise", "--db", dbPath], { cwd: root, env, stdout: "pipe", stderr: "pipe" }),
  );
  const done = procs.map((proc) =>
    Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]).then(([stdout, stderr, code]) => ({
      pid: proc.pid,
      code,
      stdout,
      stderr,
    })),
  );
  // Both ready (or one already exited, which the assertions on its output then explain).
  let exited = false;
  void Promise.race(done).then(() => (exited = true));
  while (!exited && !procs.every((p) => existsSync(`${barrier}.${p.pid}`))) await Bun.sleep(2);
  writeFileSync(barrier, "");
  return Promise.all(done);
}

/** "<run id> <task id> <pid>" per task execution, as the fixture appends them. */
function executions(log: string): { runId: string; taskId: string; pid: number }[] {
  return readFileSync(log, "utf8")
    .trim()
    .split("\n")
    .map((line) => {
      const [runId, taskId, pid] = line.split(" ");
      return { runId: runId!, taskId: taskId!, pid: Number(pid) };
    });
}

describe("smithers supervise", () => {
  test("two daemons started together on due timers, decided approvals, a sent signal and a due cron slot: each is woken, and each task runs, exactly once", async () => {
    const dbPath = tempDbPath();
    const log = join(dirname(dbPath), "executions.log");
    const workflow = await loadWorkflowFile(fixture);
    const start = (runId: string, wait: string, timer?: string) =>
      runWorkflow(workflow, { runId, input: { wait, log, timer }, dbPath, workflowPath: fixture, waitInPlaceMs: 0 });

    const timers = ["timer-1", "timer-2", "timer-3"];
    const gates = ["gate-1", "gate-2", "gate-3"];
    const started = await Promise.all([
      ...timers.map((id) => start(id, "timer")),
      ...gates.map((id) => start(id, "approval")),
      start("signal-1", "signal"),
      // Not due: an undecided gate and a timer an hour away stay waiting.
      start("gate-open", "approval"),
      start("timer-later", "timer", "1h"),
    ]);
    expect(started.map((r): string => r.status)).toEqual([
      ...timers.map(() => "waiting-timer"),
      ...gates.map(() => "waiting-approval"),
      "waiting-event",
      "waiting-approval",
      "waiting-timer",
    ]);
    // One more gated run started and approved by the CLI, as a person would.
    const up = smithers(["up", fixture, "--db", dbPath, "--run-id", "gate-cli", "--input", JSON.stringify({ wait: "approval", log })]);
    expect([up.code, up.stdout]).toEqual([3, expect.stringContaining("run gate-cli waiting-approval")]);
    expect(smithers(["approve", "gate-cli", "--yes", "--db", dbPath]).code).toBe(0);

    const db = openSmithersDb(dbPath);
    try {
      for (const runId of gates) await approve(db, { runId, by: "test" });
      expect((await sendSignal(db, { runId: "signal-1", name: "go", data: { from: "test" } })).waitingNodes).toEqual([{ nodeId: "wait", iteration: 0 }]);
      // Added an hour ago: the latest */5 slot is due, the eleven or twelve before it were missed.
      await addCron(db, { workflowPath: fixture, schedule: "*/5 * * * *", input: { wait: "none", log }, now: () => Date.now() - 3_600_000 });
    } finally {
      await db.close();
    }
    const due = [...timers, ...gates, "gate-cli", "signal-1"].sort();
    // The timers fire 300 ms after they started: wait for that time, not for the daemons.
    const [timerDue] = sql<{ at: number }>(
      dbPath,
      `SELECT max(wake_at_ms) AS at FROM _smithers_runs WHERE run_id IN (${timers.map(() => "?").join(", ")})`,
      ...timers,
    );
    await Bun.sleep(Math.max(0, timerDue!.at - Date.now()) + 5);
    const dueNow = sql<{ run_id: string }>(dbPath, "SELECT run_id FROM _smithers_runs WHERE wake_at_ms <= ? ORDER BY run_id", Date.now());
    expect(dueNow.map((r) => r.run_id)).toEqual(due);

    const daemons = await twoDaemons(dbPath);
    expect(daemons.map((d) => [d.code, d.stderr])).toEqual([
      [0, ""],
      [0, ""],
    ]);

    // Every due run ends finished; the undecided gate and the later timer still wait; one cron run.
    const rows = sql<{ run_id: string; status: string }>(dbPath, "SELECT run_id, status FROM _smithers_runs ORDER BY run_id");
    const cronRuns = rows.filter((r) => r.run_id.startsWith("cron:daemon-waits:"));
    expect(cronRuns).toEqual([{ run_id: expect.stringMatching(/^cron:daemon-waits:\d+$/), status: "finished" }]);
    const cronRunId = cronRuns[0]!.run_id;
    expect(rows.filter((r) => r !== cronRuns[0])).toEqual(
      [
        ...due.map((run_id) => ({ run_id, status: "finished" })),
        { run_id: "gate-open", status: "waiting-approval" },
        { run_id: "timer-later", status: "waiting-timer" },
      ].sort((a, b) => a.run_id.localeCompare(b.run_id)),
    );

    // The two daemons' outcome lines: each due run resumed by one of them, the other lost it or never
    // saw it due (a daemon that found nothing at all prints "no stale runs").
    const outcomes = daemons.flatMap((d) =>
      d.stdout
        .split("\n")
        .filter((l) => /^(resumed|released|lost|skipped|cron) /.test(l))
        .map((line) => ({ pid: d.pid, line })),
    );
    const runIdOf = (line: string) => line.split(" ")[1]!.replace(/:$/, "");
    const resumedBy = new Map<string, number>();
    for (const runId of due) {
      const mine = outcomes.filter((o) => runIdOf(o.line) === runId);
      const resumed = mine.filter((o) => o.line === `resumed ${runId} finished`);
      expect(resumed).toHaveLength(1);
      resumedBy.set(runId, resumed[0]!.pid);
      for (const other of mine.filter((o) => o !== resumed[0])) {
        expect(other.line).toBe(`lost ${runId}: another process woke the run first`);
        expect(other.pid).not.toBe(resumed[0]!.pid);
      }
    }
    // The cron slot: started by one daemon (which also reports the missed slots), lost or unseen by the other.
    const cron = outcomes.filter((o) => o.line.startsWith("cron "));
    const cronWinner = cron.find((o) => o.line === `cron daemon-waits started ${cronRunId} finished`)?.pid ?? 0;
    expect(cron.filter((o) => o.pid === cronWinner).map((o) => o.line)).toEqual([
      expect.stringMatching(/^cron daemon-waits skipped 1[12] missed slots$/),
      `cron daemon-waits started ${cronRunId} finished`,
    ]);
    const cronLoser = cron.filter((o) => o.pid !== cronWinner).map((o) => o.line);
    expect(cronLoser).toEqual(cronLoser.length === 0 ? [] : [`cron daemon-waits lost ${cronRunId}: another supervisor or worker claimed this slot`]);
    // Nothing else: no run released, none of the not-due ones touched.
    expect(outcomes.filter((o) => !o.line.startsWith("cron ") && !due.includes(runIdOf(o.line)))).toEqual([]);

    // Each task body ran once: `before` in the process that started the run, `after` in the daemon that woke it.
    const ran = executions(log);
    const count = (runId: string, taskId: string) => ran.filter((e) => e.runId === runId && e.taskId === taskId).length;
    for (const runId of due) {
      expect([runId, count(runId, "before"), count(runId, "after")]).toEqual([runId, 1, 1]);
      expect(ran.find((e) => e.runId === runId && e.taskId === "after")!.pid).toBe(resumedBy.get(runId)!);
    }
    expect(ran.filter((e) => e.runId === cronRunId)).toEqual([
      { runId: cronRunId, taskId: "before", pid: cronWinner },
      { runId: cronRunId, taskId: "after", pid: cronWinner },
    ]);
    expect([count("gate-open", "after"), count("timer-later", "after")]).toEqual([0, 0]);
    expect(ran).toHaveLength(2 * (due.length + 1) + 2);
  });
});
