/**
 * bench/daemon: one daemon pass over N waiting runs (default 10,000) of which N/100 are due,
 * beside 5N finished runs: its time and the SQL statements it executes.
 *
 * The database. The due runs are real runs of ./workflow.tsx, a third each waiting on an
 * <Approval> then approved with approve(), on a <Timer> that has since fired, and on a signal then
 * sent with sendSignal() (approve and sendSignal mark the run due, as in production). The other
 * waiting runs, spread over waiting-approval (gate still requested), waiting-event (nothing sent)
 * and waiting-timer (a day or more away), and the 5N finished runs are bulk-inserted by
 * ../idle-runs.ts.
 *
 * Measured:
 * (a) the look-up, runs.listDueRuns as a pass calls it (with the workflow-path filter, as
 *     `smithers supervise` does, and without, as a pass given resolveWorkflow does): median and
 *     fastest of 21 calls, and the statements one call executes. EXPLAIN QUERY PLAN is run on the
 *     SQL text the look-up executed.
 * (b) one supervise({ db, resolveWorkflow }) pass that claims every due run and resumes it to the
 *     end: wall ms of a pass on one copy of the database with nothing counted, and the statements
 *     of the same pass on an identical copy, counted, in all and per woken run.
 *
 * What is counted: see ../statement-counter.ts; every connection of the process is counted (the
 * resumed runs open their own). The wrappers are installed for the counted calls only.
 *
 *   bun run bench/daemon/index.ts [N]      # default 10,000
 */
import { copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runs, SqliteDb, type SmithersDb } from "../../src/db/index.ts";
import { approve, runWorkflow, sendSignal, supervise, type SuperviseOutcome } from "../../src/engine/index.ts";
import { insertIdleRuns, WAITING_STATUS, WAITS } from "../idle-runs.ts";
import { markdownTable } from "../markdown-table.ts";
import { countStatements } from "../statement-counter.ts";
import workflow from "./workflow.tsx";

const workflowPath = join(import.meta.dir, "workflow.tsx");

/** The due runs, really run: each waits, then is approved or signalled (or its timer comes due). */
async function startDueRuns(db: SmithersDb, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const wait = WAITS[i % WAITS.length]!;
    const runId = `due-${i}`;
    const result = await runWorkflow(workflow, { runId, input: { wait }, dbPath: db.path, workflowPath, waitInPlaceMs: 0 });
    if (result.status !== WAITING_STATUS[wait]) throw new Error(`run ${runId} ended ${result.status}, expected ${WAITING_STATUS[wait]}`);
    if (wait === "approval") await approve(db, { runId });
    if (wait === "signal") await sendSignal(db, { runId, name: "go", data: { n: i } });
    ids.push(runId);
  }
  return ids;
}

const fmt = (n: number) => n.toLocaleString("en-US");
const ms = (n: number) => n.toFixed(n < 10 ? 2 : 0);

async function timeLookUp(db: SmithersDb, withWorkflowPathOnly: boolean, reps = 21) {
  await runs.listDueRuns(db, Date.now(), 500, withWorkflowPathOnly); // warm
  const times: number[] = [];
  let found = 0;
  for (let k = 0; k < reps; k++) {
    const started = performance.now();
    found = (await runs.listDueRuns(db, Date.now(), 500, withWorkflowPathOnly)).length;
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  const { counted } = await countStatements(() => runs.listDueRuns(db, Date.now(), 500, withWorkflowPathOnly), true);
  return { found, median: times[reps >> 1]!, fastest: times[0]!, statements: counted.total, sql: counted.sql };
}

function tally(outcomes: SuperviseOutcome[]): string {
  const by = new Map<string, number>();
  for (const o of outcomes) {
    const key = o.action === "resumed" ? `resumed ${o.result.status}` : o.action;
    by.set(key, (by.get(key) ?? 0) + 1);
  }
  return [...by].map(([k, v]) => `${v} ${k}`).join(", ");
}

export async function runDaemonBench(n = 10_000): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "smithers-bench-daemon-"));
  const paths = [join(dir, "timed.db"), join(dir, "counted.db")] as const;
  const dueCount = Math.max(WAITS.length, Math.round(n / 100));
  try {
    const setup = new SqliteDb(paths[0]);
    const setupStarted = performance.now();
    const due = await startDueRuns(setup, dueCount);
    insertIdleRuns(setup.sqlite, n - dueCount, 5 * n, Date.now());
    // The due timers fire 200 ms after they started: wait for that, then the database is complete.
    const timerAt = setup.sqlite
      .query<{ at: number }, []>("SELECT max(wake_at_ms) AS at FROM _smithers_runs WHERE status = 'waiting-timer' AND run_id LIKE 'due-%'")
      .get();
    await Bun.sleep(Math.max(0, (timerAt?.at ?? 0) - Date.now()) + 5);
    await setup.close();
    for (const suffix of ["", "-wal"]) if (existsSync(paths[0] + suffix)) copyFileSync(paths[0] + suffix, paths[1] + suffix);
    const setupMs = performance.now() - setupStarted;

    const db = new SqliteDb(paths[0]);
    const counted = new SqliteDb(paths[1]);
    try {
      const statuses = db.sqlite
        .query<{ status: string; n: number }, []>("SELECT status, count(*) AS n FROM _smithers_runs GROUP BY status ORDER BY status")
        .all()
        .map((r) => `${fmt(r.n)} ${r.status}`)
        .join(", ");
      const lookUps = [await timeLookUp(db, true), await timeLookUp(db, false)];
      const resolveWorkflow = () => workflow;

      const passStarted = performance.now();
      const timed = await supervise({ db, resolveWorkflow });
      const passMs = performance.now() - passStarted;
      const countedStarted = performance.now();
      const { value: countedOutcomes, counted: c } = await countStatements(() => supervise({ db: counted, resolveWorkflow }));
      const countedMs = performance.now() - countedStarted;
      const woken = countedOutcomes.filter((o) => o.action === "resumed").length;
      const finished = (d: SqliteDb) =>
        d.sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM _smithers_runs WHERE run_id LIKE 'due-%' AND status = 'finished'").get()!.n;

      console.log(
        `\nbench/daemon: one daemon pass over ${fmt(n)} waiting runs of which ${fmt(due.length)} are due (Bun ${Bun.version}, ${process.platform}/${process.arch})`,
      );
      console.log(`runs: ${statuses} (built in ${(setupMs / 1000).toFixed(1)} s)\n`);
      console.log("(a) the look-up, runs.listDueRuns (limit 500), 21 calls");
      console.log(
        markdownTable(
          ["look-up", "due found", "median ms", "fastest ms", "statements"],
          lookUps.map((l, i) => [
            i === 0 ? "workflow-path runs only (`smithers supervise`)" : "any run (a pass given resolveWorkflow)",
            fmt(l.found),
            ms(l.median),
            ms(l.fastest),
            String(l.statements),
          ]),
        ),
      );
      console.log("\n(b) one supervise({ db, resolveWorkflow }) pass: look-ups, a claim per due run, each run resumed to its end");
      console.log(
        markdownTable(
          ["pass", "woken", "wall ms", "ms per woken run", "statements", "statements per woken run"],
          [["supervise", fmt(woken), ms(passMs), ms(passMs / Math.max(1, woken)), fmt(c.total), (c.total / Math.max(1, woken)).toFixed(1)]],
        ),
      );
      const kinds = [...c.byKind].sort((a, b) => b[1] - a[1]);
      console.log(`\nstatements of the pass by kind: ${kinds.map(([k, v]) => `${k} ${fmt(v)}`).join(", ")}`);
      console.log(
        `outcomes: timed pass ${tally(timed)}; counted pass (${ms(countedMs)} ms with the counting) ${tally(countedOutcomes)}; due runs finished: ${finished(db)} and ${finished(counted)}`,
      );
      for (const [i, l] of lookUps.entries()) {
        const [text] = l.sql;
        if (l.sql.length !== 1 || !text) throw new Error(`the look-up executed ${l.sql.length} statements, expected 1`);
        const plan = db.sqlite.query<{ detail: string }, []>(`EXPLAIN QUERY PLAN ${text}`).all();
        console.log(`\nlook-up ${i === 0 ? "(workflow-path runs only)" : "(any run)"}: ${text}\nquery plan: ${plan.map((r) => r.detail).join(" | ")}`);
      }
    } finally {
      await db.close();
      await counted.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) await runDaemonBench(Number(process.argv[2] ?? 10_000));
