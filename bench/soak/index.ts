/**
 * bench/soak: several `smithers` processes on one database under kill -9, for N minutes, then the
 * invariants. Not part of `npm test`; see README.md.
 *
 *   bun run bench/soak/index.ts --minutes 10 --db sqlite
 *   bun run bench/soak/index.ts --minutes 10 --db postgres
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { markdownTable } from "../markdown-table.ts";
import { checkInvariants } from "./check.ts";
import { dbFigures, longestPauses, wakeLatencies } from "./figures.ts";
import { createDriver, WORKFLOWS_DIR, workflowPath } from "./driver.ts";
import { createPool, notableLogLines, type Pool } from "./procs.ts";
import { openStore, startSoakPostgres, type Backend, type Store } from "./store.ts";

const USAGE = `Usage: bun run bench/soak/index.ts [--minutes N] [--db sqlite|postgres] [--kill-every S] [--load N] [--settle S] [--deny P] [--fail P] [--keep]
  --minutes N     how long runs are started and processes killed (default 2; fractions allowed)
  --db KIND       sqlite (a file, default) or postgres (a throwaway server on a free loopback port)
  --kill-every S  mean seconds between two kill -9 of a random process (default 3)
  --load N        start runs while fewer than N are running or queued (default 6)
  --settle S      at most this long for everything to end once the work stops (default 120)
  --deny P        share of approvals denied (default 0.25)
  --fail P        chance a task body throws and is retried (default 0.2)
  --keep          keep the temporary directory (database, logs, execution log) even when all holds`;

const ENDED_SQL = "('finished', 'failed', 'cancelled', 'continued')";
/** Log lines worth reading when something fails. */
const NOTABLE = /database is locked|TypeError|uncaught|unhandled|panic|SQLITE_|ENGINE_ERROR|DB_WRITE_FAILED|released |deadlock|Failed query/i;

function flags() {
  const { values } = parseArgs({
    args: Bun.argv.slice(2),
    options: {
      minutes: { type: "string", default: "2" },
      db: { type: "string", default: "sqlite" },
      "kill-every": { type: "string", default: "3" },
      load: { type: "string", default: "6" },
      settle: { type: "string", default: "120" },
      deny: { type: "string", default: "0.25" },
      fail: { type: "string", default: "0.2" },
      keep: { type: "boolean", default: false },
      help: { type: "boolean", default: false },
    },
  });
  const num = (name: keyof typeof values, min: number, max = Number.POSITIVE_INFINITY) => {
    const n = Number(values[name]);
    if (!(n >= min && n <= max))
      throw new Error(`--${name} must be a number from ${min}${max < Number.POSITIVE_INFINITY ? ` to ${max}` : ""}, got ${String(values[name])}`);
    return n;
  };
  if (values.db !== "sqlite" && values.db !== "postgres") throw new Error(`--db must be sqlite or postgres, got ${values.db}`);
  return {
    help: values.help,
    minutes: num("minutes", 0.05),
    backend: values.db as Backend,
    killEveryMs: num("kill-every", 0.2) * 1000,
    load: num("load", 1),
    settleMs: num("settle", 5) * 1000,
    denyP: num("deny", 0, 1),
    failP: num("fail", 0, 0.9),
    keep: values.keep,
  };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

const sleep = (ms: number) => Bun.sleep(ms);
const rand = (lo: number, hi: number) => lo + Math.random() * (hi - lo);
const fmt = (n: number) => (Number.isInteger(n) ? n.toLocaleString("en-US") : n.toFixed(2));

/** The daemons' command lines: two workers (one loading each run's recorded file, one serving the workflow directory), a supervisor, a server. */
function daemonArgs(db: string, port: number): Record<string, string[]> {
  const worker = ["worker", "--db", db, "--lease", "2s", "--poll-interval", "250ms", "--concurrency", "4", "--quiet"];
  return {
    "worker-a": worker,
    "worker-b": [...worker, "--workflows", WORKFLOWS_DIR],
    supervise: ["supervise", "--watch", "--interval-ms", "500", "--stale-after-ms", "3000", "--db", db],
    serve: ["serve", "--port", String(port), "--db", db, "--workflows", WORKFLOWS_DIR, "--lease", "2s"],
    "worker-drain": worker,
  };
}

async function main(): Promise<number> {
  const o = flags();
  if (o.help) {
    console.log(USAGE);
    return 0;
  }
  const dir = mkdtempSync(join(tmpdir(), "smithers-soak-"));
  const logDir = join(dir, "logs");
  mkdirSync(logDir);
  const execFile = join(dir, "exec.log");
  writeFileSync(execFile, "");
  const pg = o.backend === "postgres" ? await startSoakPostgres() : undefined;
  const target = pg?.url ?? join(dir, "soak.db");
  const port = await freePort();
  const pool = createPool({ logDir, env: { SOAK_EXEC_FILE: execFile, SOAK_FAIL_P: String(o.failP) }, daemons: daemonArgs(target, port) });
  const serveUrl = `http://127.0.0.1:${port}`;
  let store: Store | undefined;
  let keepDir = o.keep;
  try {
    console.log(`soak: ${o.minutes} min on ${o.backend} (${target}), kill -9 every ~${o.killEveryMs / 1000} s; files in ${dir}`);
    // One run before anything else: it creates the database and its tables, which the other commands expect to exist.
    const first = await pool.run([
      "up",
      workflowPath("pipeline"),
      "--db",
      target,
      "--run-id",
      "s00000-pipeline",
      "--input",
      '{"n":0,"onDeny":"fail","wait":"2s"}',
    ]);
    if (first.code !== 0 && first.code !== 1) throw new Error(`the first run failed to start (exit ${first.code}):\n${first.out}`);
    store = openStore(o.backend, target);
    for (const name of ["worker-a", "worker-b", "supervise", "serve"]) pool.startDaemon(name);
    const serveAlive = () => {
      const c = pool.daemon("serve");
      return c && c.proc.exitCode === null && c.proc.signalCode === null ? serveUrl : undefined;
    };
    const driver = createDriver({ pool, store, serveUrl: serveAlive, denyP: o.denyP, refusalLog: join(dir, "refused.log") });
    driver.acked.set("s00000-pipeline", { kind: "pipeline", channel: "up" });
    const kills: Record<string, number> = {};
    const workStart = Date.now();
    const workEnd = workStart + o.minutes * 60_000;
    let nextKill = workStart + rand(0.5, 1.5) * o.killEveryMs;
    let lastReport = workStart;
    while (Date.now() < workEnd) {
      await driver.submit(o.load);
      await driver.answer();
      if (Date.now() >= nextKill) {
        const victims = pool.killable();
        const victim = victims[Math.floor(Math.random() * victims.length)];
        if (victim) {
          kills[victim.kind] = (kills[victim.kind] ?? 0) + 1;
          void pool.kill9(victim, rand(300, 1500));
        }
        nextKill = Date.now() + rand(0.5, 1.5) * o.killEveryMs;
      }
      if (Date.now() - lastReport >= 30_000) {
        lastReport = Date.now();
        const ended = await store.all<{ n: number }>(`SELECT count(*) AS n FROM _smithers_runs WHERE status IN ${ENDED_SQL}`);
        console.log(
          `  ${Math.round((lastReport - workStart) / 1000)} s: ${driver.acked.size} runs started, ${ended[0]?.n ?? 0} ended, ${Object.values(kills).reduce((a, b) => a + b, 0)} kills`,
        );
      }
      await sleep(250);
    }

    // Settle: no new runs and no kills; every daemon up again, plus a fresh worker; everything answered at once.
    const settleStart = Date.now();
    await sleep(1600); // the last kill's restart
    for (const name of ["worker-a", "worker-b", "supervise", "serve"]) {
      const c = pool.daemon(name);
      if (!c || c.proc.exitCode !== null || c.proc.signalCode !== null) pool.startDaemon(name);
    }
    pool.startDaemon("worker-drain");
    let open = -1;
    while (Date.now() - settleStart < o.settleMs) {
      await driver.answer(true);
      const [notEnded, queued] = await Promise.all([
        store.all<{ n: number }>(`SELECT count(*) AS n FROM _smithers_runs WHERE status NOT IN ${ENDED_SQL}`),
        store.all<{ n: number }>("SELECT count(*) AS n FROM _smithers_queue"),
      ]);
      open = Number(notEnded[0]?.n ?? 0) + Number(queued[0]?.n ?? 0) + pool.killable().filter((c) => c.kind === "up").length;
      if (open === 0) break;
      await sleep(500);
    }
    const settledMs = Date.now() - settleStart;
    const stillInFlight = await driver.idle(70_000);
    const exits = await pool.stopAll(15_000);
    const endAt = Date.now();

    const { invariants, exec } = await checkInvariants(store, { execFile, acked: new Set(driver.acked.keys()), answered: driver.answered });
    const figures = await dbFigures(store);
    const pauses = await longestPauses(store, 5);
    const wakes = await wakeLatencies(store);
    const text = report({
      o,
      stillInFlight,
      invariants,
      exec,
      figures: { ...figures, ...wakes.figures },
      pauses: [...pauses, ...wakes.worst.map((w) => `slowest wake: ${w}`)],
      driver,
      kills,
      exits,
      pool,
      workMs: o.minutes * 60_000,
      settledMs,
      open,
      totalMs: endAt - workStart,
    });
    console.log(text);
    writeFileSync(join(dir, "report.md"), `${text}\n`);
    const failed = invariants.some((i) => i.violations.length > 0);
    keepDir ||= failed;
    if (keepDir) {
      // A PostgreSQL database goes with its server: what a reader needs first is kept as JSON.
      if (pg) writeFileSync(join(dir, "runs.json"), JSON.stringify(await store.all("SELECT * FROM _smithers_runs ORDER BY run_id"), null, 1));
      console.log(`\nkept for inspection: ${dir}`);
    }
    return failed ? 1 : 0;
  } catch (e) {
    keepDir = true;
    console.error(`kept for inspection: ${dir}`);
    throw e;
  } finally {
    await pool.stopAll(5_000);
    await store?.close();
    // The server's log names the cause of any failed statement (the processes print only drizzle's "Failed query").
    const pgLog = pg ? join(dirname(pg.server.dataDir), "server.log") : undefined;
    if (pgLog && existsSync(pgLog)) copyFileSync(pgLog, join(dir, "postgres.log"));
    await pg?.server.stop();
    if (!keepDir) rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  }
}

type ReportInput = {
  o: ReturnType<typeof flags>;
  stillInFlight: string[];
  invariants: Awaited<ReturnType<typeof checkInvariants>>["invariants"];
  exec: Awaited<ReturnType<typeof checkInvariants>>["exec"];
  figures: Record<string, number>;
  pauses: string[];
  driver: ReturnType<typeof createDriver>;
  kills: Record<string, number>;
  exits: { name: string; code: number | null; forced: boolean }[];
  pool: Pool;
  workMs: number;
  settledMs: number;
  open: number;
  totalMs: number;
};

function report(r: ReportInput): string {
  const lines: string[] = [];
  const log = (line: string) => lines.push(line);
  const total = (c: Record<string, number>) => Object.values(c).reduce((a, b) => a + b, 0);
  log(`\n## Invariants (${r.o.backend}, ${r.o.minutes} min)\n`);
  log(
    markdownTable(
      ["invariant", "checked", "violations", "result"],
      r.invariants.map((i) => [i.name, fmt(i.checked), fmt(i.violations.length), i.violations.length === 0 ? "holds" : "FAILS"]),
    ),
  );
  for (const note of r.invariants.flatMap((i) => i.notes ?? [])) log(`  still waiting, with a reason: ${note}`);
  for (const i of r.invariants.filter((x) => x.violations.length > 0)) {
    log(`\n${i.name}: ${i.violations.length} violation(s)`);
    for (const v of i.violations.slice(0, 20)) log(`  - ${v}`);
    if (i.violations.length > 20) log(`  … and ${i.violations.length - 20} more`);
  }
  // A request to a server that is down, or killed before it answered, is refused by design; anything else is worth reading.
  const expected = Object.fromEntries(Object.entries(r.driver.refusals).filter(([k]) => /: (SERVE_DOWN|HTTP_UNREACHABLE|HTTP_TIMEOUT)$/.test(k)));
  const ended = (r.figures["runs finished"] ?? 0) + (r.figures["runs failed"] ?? 0) + (r.figures["runs cancelled"] ?? 0);
  const committed = r.figures["attempts finished"] ?? 0;
  const rows: [string, number | string][] = [
    ["runs started (acknowledged)", r.driver.acked.size],
    ...Object.entries(r.driver.counters).sort(),
    ...Object.entries(r.figures),
    ["kills (kill -9)", total(r.kills)],
    ...Object.entries(r.kills).map(([k, n]): [string, number] => [`  of ${k}`, n]),
    ["daemons that exited by themselves (restarted)", r.pool.crashes.length],
    ["task bodies executed", r.exec.bodies],
    ["bodies of attempts killed mid-way (legitimate re-runs)", r.exec.reRuns],
    ["refused starts and answers: serve down or killed mid-request", total(expected)],
    ["refused starts and answers: any other reason (refused.log)", total(r.driver.refusals) - total(expected)],
    ...Object.entries(r.driver.refusals).map(([k, n]): [string, number] => [`  ${k}`, n]),
    ["settle time, s", r.settledMs / 1000],
    ["runs or requests still open when settling stopped", r.open],
    ["runs ended per minute (work + settle)", (ended / r.totalMs) * 60_000],
    ["tasks committed per second (work + settle)", (committed / r.totalMs) * 1000],
  ];
  log(`\n## Figures\n`);
  log(
    markdownTable(
      ["figure", "value"],
      rows.map(([k, v]) => [k, typeof v === "number" ? fmt(v) : v]),
    ),
  );
  log(
    "\nlongest pauses inside runs, not waits (a run whose process was killed waits for the next pass that sees its owner dead: its pid is gone on this host):",
  );
  for (const p of r.pauses) log(`  ${p}`);
  for (const f of r.stillInFlight) log(`a start or answer still in flight 70 s after settling: ${f}`);
  for (const c of r.pool.crashes) log(`\ndaemon ${c.name} exited by itself (exit ${c.code}), started again; its log: ${c.log}`);
  const unclean = r.exits.filter((e) => e.code !== 0 || e.forced);
  if (unclean.length > 0)
    log(
      `\nprocesses that did not stop cleanly on SIGTERM: ${unclean.map((e) => `${e.name} (${e.forced ? "killed after 15 s" : `exit ${e.code}`})`).join(", ")}`,
    );
  const notable = notableLogLines(r.pool.logDir, NOTABLE);
  if (notable.size > 0) {
    log("\nlog lines worth reading (first 5 per process kind):");
    for (const [kind, lines] of notable) {
      log(`  ${kind}: ${lines.length} line(s)`);
      for (const l of lines.slice(0, 5)) log(`    ${l}`);
    }
  }
  return lines.join("\n");
}

try {
  process.exitCode = await main();
} catch (e) {
  console.error(`soak: ${(e as Error).message}`);
  process.exitCode = 2;
}
