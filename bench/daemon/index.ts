/**
 * bench/daemon: one daemon pass over N waiting runs (default 10,000) of which N/100 are due,
 * beside 5N finished runs: its time and the SQL statements it executes.
 *
 * The database. The due runs are real runs of ./workflow.tsx, a third each waiting on an
 * <Approval> then approved with approve(), on a <Timer> that has since fired, and on a signal then
 * sent with sendSignal() (approve and sendSignal mark the run due, as in production). The other
 * waiting runs, spread over waiting-approval (gate still requested), waiting-event (nothing sent)
 * and waiting-timer (a day or more away), and the 5N finished runs are bulk-inserted with
 * prepared statements in one transaction: a run row and a node row each, a gate row per approval.
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
 * What is counted: every execution of a prepared statement, i.e. each call of run, get, all,
 * values, raw or iterate on the native statement prototype that every bun:sqlite Statement
 * delegates to (a JS Statement's own methods are set per instance, so its prototype cannot be
 * wrapped), plus each Database.prototype.exec/run call (BEGIN, COMMIT, PRAGMA …). Every connection
 * of the process is counted: the resumed runs open their own. Preparing counts nothing; an exec
 * holding several statements counts once. The wrappers are installed for the counted calls only.
 *
 *   bun run bench/daemon/index.ts [N]      # default 10,000
 */
import { Database } from "bun:sqlite";
import { copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runs, SqliteDb, type SmithersDb } from "../../src/db/index.ts";
import { approve, runWorkflow, sendSignal, supervise, type SuperviseOutcome } from "../../src/engine/index.ts";
import { markdownTable } from "../markdown-table.ts";
import workflow from "./workflow.tsx";

const workflowPath = join(import.meta.dir, "workflow.tsx");
const WAITS = ["approval", "timer", "signal"] as const;
const WAITING_STATUS = { approval: "waiting-approval", timer: "waiting-timer", signal: "waiting-event" } as const;
const EXECUTE = ["run", "get", "all", "values", "raw", "iterate"] as const;

type Counted = { total: number; byKind: Map<string, number>; sql: string[] };

const kindOf = (text: string) => /^\s*(\w+)/.exec(text)?.[1]?.toUpperCase() ?? "?";

/** Runs `fn` with every statement execution of the process counted (see the header), by first keyword. */
async function countStatements<T>(fn: () => Promise<T>, keepSql = false): Promise<{ value: T; counted: Counted }> {
  const probe = new Database(":memory:");
  const nativeProto = Object.getPrototypeOf((probe.prepare("SELECT 1") as unknown as { native: object }).native) as Record<string, unknown>;
  probe.close();
  const counted: Counted = { total: 0, byKind: new Map(), sql: [] };
  const kinds = new WeakMap<object, string>();
  const note = (kind: string) => {
    counted.total++;
    counted.byKind.set(kind, (counted.byKind.get(kind) ?? 0) + 1);
  };
  const restore: (() => void)[] = [];
  const wrap = (
    target: Record<string, unknown>,
    name: string,
    kind: (self: object, args: unknown[]) => string,
    text: (self: object, args: unknown[]) => string,
  ) => {
    const original = target[name];
    if (typeof original !== "function") return;
    target[name] = function (this: object, ...args: unknown[]) {
      note(kind(this, args));
      const result = (original as (...a: unknown[]) => unknown).apply(this, args);
      if (keepSql) counted.sql.push(text(this, args)); // after the call: the text then shows the bound values
      return result;
    };
    restore.push(() => (target[name] = original));
  };
  // A statement's kind is read from its text once (toString expands the bound parameters).
  const statementKind = (self: object) => {
    let kind = kinds.get(self);
    if (kind === undefined) kinds.set(self, (kind = kindOf(String(self))));
    return kind;
  };
  for (const name of EXECUTE) wrap(nativeProto, name, statementKind, (self) => String(self));
  const dbProto = Database.prototype as unknown as Record<string, unknown>;
  for (const name of ["exec", "run"])
    wrap(
      dbProto,
      name,
      (_self, args) => kindOf(String(args[0])),
      (_self, args) => String(args[0]),
    );
  try {
    return { value: await fn(), counted };
  } finally {
    for (const undo of restore.reverse()) undo();
  }
}

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

/** The runs that are not due, waiting and finished, in one transaction of prepared INSERTs. */
function insertIdleRuns(sqlite: Database, waiting: number, finished: number, nowMs: number): void {
  const run = sqlite.prepare("INSERT INTO _smithers_runs (run_id, workflow_name, status, created_at_ms, wake_at_ms) VALUES (?, 'w', ?, ?, ?)");
  const node = sqlite.prepare(
    "INSERT INTO _smithers_nodes (run_id, node_id, iteration, state, updated_at_ms, output_table, wake_at_ms) VALUES (?, 'wait', 0, ?, ?, 'step', ?)",
  );
  const gate = sqlite.prepare("INSERT INTO _smithers_approvals (run_id, node_id, iteration, status, requested_at_ms) VALUES (?, 'wait', 0, ?, ?)");
  sqlite.transaction(() => {
    for (let i = 0; i < waiting; i++) {
      const wait = WAITS[i % WAITS.length]!;
      const wakeAtMs = wait === "timer" ? nowMs + 86_400_000 + i : null;
      run.run(`w${i}`, WAITING_STATUS[wait], nowMs, wakeAtMs);
      node.run(`w${i}`, WAITING_STATUS[wait], nowMs, wakeAtMs);
      if (wait === "approval") gate.run(`w${i}`, "requested", nowMs);
    }
    for (let i = 0; i < finished; i++) {
      run.run(`f${i}`, "finished", nowMs, null);
      node.run(`f${i}`, "finished", nowMs, null);
    }
  })();
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
