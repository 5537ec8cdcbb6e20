/**
 * bench/pg-faults: how long PostgreSQL faults stall a client, for the clients Smithers could use.
 *
 * One throwaway server (scripts/postgres/server.ts). For each client, C loops each run one small
 * transaction after another (BEGIN; INSERT; COMMIT), retrying a failed one after 20 ms until it
 * commits, as the engine's retry policy would. After a second of steady state the bench injects a
 * fault and keeps the loops going until each has committed a transaction begun after it:
 * - restart: `pg_ctl restart -m fast` (the server is back when pg_ctl returns);
 * - kill: `pg_terminate_backend` of every connection of the client, at once.
 * Reported per fault: the longest transaction (first try to commit, retries included) and the time
 * from the fault's end until every loop committed again; the uncaught exceptions the client threw
 * (postgres.js issues #1066, #1154, #1208); and the steady-state transactions per second.
 *
 *   bun run bench/pg-faults/index.ts [--clients postgresjs-defaults,smithers,bun-sql] [--concurrency 8] [--rounds 3]
 */
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import postgres from "postgres";
import { SQL } from "bun";
import { PgDb } from "../../src/db/pg/pg-db.ts";
import { asServerUser, ensurePostgresBinDir } from "../../scripts/postgres/binaries.ts";
import { startPostgres, type PostgresServer } from "../../scripts/postgres/server.ts";
import { markdownTable } from "../markdown-table.ts";

type Client = { tx(value: number): Promise<void>; end(): Promise<void> };
type Factory = { name: string; open(url: string, appName: string, max: number): Client };

const RETRY_PAUSE_MS = 20;
/** A client that has not recovered by then is reported as "> cap". */
const RECOVERY_CAP_MS = 70_000;

const FACTORIES: Record<string, Factory> = {
  "postgresjs-defaults": {
    name: "postgres.js 3.4.9, its defaults",
    open(url, appName, max) {
      const sql = postgres(url, { max, onnotice: () => {}, connection: { application_name: appName } });
      return {
        tx: (value) => sql.begin((t) => t`INSERT INTO bench_tx (v) VALUES (${value})`).then(() => undefined),
        end: () => sql.end({ timeout: 1 }),
      };
    },
  },
  smithers: {
    name: "postgres.js as PgDb configures it (withTransaction)",
    open(url, appName, max) {
      const db = new PgDb(url, { max, applicationName: appName, ensureTables: false, retryPolicy: { retries: 0, baseDelayMs: 1, maxDelayMs: 1, jitter: 0 } });
      return {
        tx: (value) => db.withTransaction("bench", (q) => q.run("INSERT INTO bench_tx (v) VALUES (?)", value)).then(() => undefined),
        end: () => db.close(),
      };
    },
  },
  "bun-sql": {
    name: `Bun.SQL (Bun ${Bun.version})`,
    open(url, appName, max) {
      const u = new URL(url);
      u.searchParams.set("application_name", appName);
      const sql = new SQL(u.toString(), { max, connectionTimeout: 5, idleTimeout: 0 });
      return {
        tx: (value) => sql.begin((t) => t`INSERT INTO bench_tx (v) VALUES (${value})`).then(() => undefined),
        end: () => sql.close({ timeout: 1 }),
      };
    },
  },
};

type Fault = "restart" | "kill";
type Measure = { longestMs: number; recoveryMs: number; uncaught: number };

let uncaught = 0;
const countUncaught = (error: unknown) => {
  uncaught++;
  if (process.env.BENCH_VERBOSE) console.error("uncaught:", error);
};

/** pg_ctl as the server user; its log goes where the server's went, so no pipe of ours outlives it. */
async function pgCtl(server: PostgresServer, args: string[]): Promise<void> {
  const found = ensurePostgresBinDir();
  if (!found.found) throw new Error(found.reason);
  const log = join(dirname(server.dataDir), "server.log");
  const [command, argv] = asServerUser(join(found.binDir, "pg_ctl"), [...args, "-D", server.dataDir, "-l", log]);
  const child = Bun.spawn([command, ...argv], { cwd: "/", stdio: ["ignore", "ignore", "pipe"] });
  const stderr = await new Response(child.stderr).text();
  if ((await child.exited) !== 0) throw new Error(`pg_ctl ${args.join(" ")} failed: ${stderr}`);
}

async function injure(fault: Fault, server: PostgresServer, admin: postgres.Sql, appName: string): Promise<void> {
  if (fault === "restart") {
    // pg_ctl restart keeps the options the server was started with (postmaster.opts); the port stays.
    await pgCtl(server, ["restart", "-w", "-m", "fast"]);
    return;
  }
  await admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = ${appName}`;
}

/** C loops of transactions through a fault; see the header. */
async function measure(factory: Factory, fault: Fault, server: PostgresServer, url: string, concurrency: number, round: number): Promise<Measure> {
  const appName = `bench_${fault}_${round}`;
  const client = factory.open(url, appName, concurrency);
  const before = uncaught;
  let faultEnd = Number.POSITIVE_INFINITY;
  let stop = false;
  let longest = 0;
  const recovered: number[] = [];
  const loop = async (id: number) => {
    let value = id * 1_000_000;
    while (!stop) {
      const began = performance.now();
      for (;;) {
        try {
          await client.tx(value++);
          break;
        } catch {
          if (stop) return;
          await Bun.sleep(RETRY_PAUSE_MS);
        }
      }
      const ended = performance.now();
      if (faultEnd !== Number.POSITIVE_INFINITY) longest = Math.max(longest, ended - began);
      if (began > faultEnd && recovered[id] === undefined) recovered[id] = ended - faultEnd;
    }
  };
  const loops = Array.from({ length: concurrency }, (_, id) => loop(id));
  await Bun.sleep(1_000);
  const admin = postgres(url, { max: 1, onnotice: () => {} });
  await injure(fault, server, admin, appName);
  faultEnd = performance.now();
  await admin.end({ timeout: 1 }).catch(() => undefined);
  const capAt = faultEnd + RECOVERY_CAP_MS;
  while (recovered.filter((x) => x !== undefined).length < concurrency && performance.now() < capAt) await Bun.sleep(20);
  stop = true;
  await Promise.race([Promise.all(loops), Bun.sleep(5_000)]);
  await client.end().catch(() => undefined);
  const done = recovered.filter((x) => x !== undefined);
  return { longestMs: longest, recoveryMs: done.length < concurrency ? Number.POSITIVE_INFINITY : Math.max(...done), uncaught: uncaught - before };
}

async function throughput(factory: Factory, url: string, concurrency: number): Promise<number> {
  const client = factory.open(url, "bench_steady", concurrency);
  let count = 0;
  let stop = false;
  const loops = Array.from({ length: concurrency }, async (_, id) => {
    let value = -1 - id * 1_000_000;
    while (!stop) {
      await client.tx(value--);
      count++;
    }
  });
  await Bun.sleep(300); // connections opened, statements prepared
  const from = count;
  const started = performance.now();
  await Bun.sleep(3_000);
  const perSecond = ((count - from) * 1000) / (performance.now() - started);
  stop = true;
  await Promise.all(loops);
  await client.end();
  return perSecond;
}

/** Prints the table (see the header); `args` are this script's flags. */
export async function runPgFaultsBench(args: string[]): Promise<void> {
  // The driver's uncaught errors are what is counted: they must not end the bench.
  process.on("uncaughtException", countUncaught);
  process.on("unhandledRejection", countUncaught);
  try {
    await pgFaults(args);
  } finally {
    process.off("uncaughtException", countUncaught);
    process.off("unhandledRejection", countUncaught);
  }
}

async function pgFaults(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      clients: { type: "string", default: "postgresjs-defaults,smithers,bun-sql" },
      concurrency: { type: "string", default: "8" },
      rounds: { type: "string", default: "3" },
    },
  });
  const names = values.clients.split(",").map((s) => s.trim());
  for (const name of names) if (!FACTORIES[name]) throw new Error(`unknown client ${name}; known: ${Object.keys(FACTORIES).join(", ")}`);
  const concurrency = Number(values.concurrency);
  const rounds = Number(values.rounds);
  if (!(Number.isInteger(concurrency) && concurrency > 0 && Number.isInteger(rounds) && rounds > 0))
    throw new Error("--concurrency and --rounds must be whole numbers > 0");

  const server = await startPostgres();
  try {
    const fmt = (ms: number) => (Number.isFinite(ms) ? `${Math.round(ms)}` : `> ${RECOVERY_CAP_MS / 1000} s`);
    const max = (xs: number[]) => Math.max(...xs);
    const rows: string[][] = [];
    for (const name of names) {
      const factory = FACTORIES[name]!;
      const url = await server.createDatabase();
      const setup = postgres(url, { max: 1, onnotice: () => {} });
      await setup`CREATE TABLE bench_tx (id bigserial PRIMARY KEY, v bigint NOT NULL)`;
      await setup.end();
      const tps = await throughput(factory, url, concurrency);
      const byFault: Record<Fault, Measure[]> = { restart: [], kill: [] };
      console.error(`${factory.name}: ${Math.round(tps)} tx/s`);
      for (let round = 0; round < rounds; round++) {
        for (const fault of ["restart", "kill"] as const) {
          byFault[fault].push(await measure(factory, fault, server, url, concurrency, round));
          console.error(`  ${fault} round ${round}: ${JSON.stringify(byFault[fault].at(-1))}`);
        }
      }
      const cells = (fault: Fault) => {
        const list = byFault[fault];
        return [fmt(max(list.map((m) => m.recoveryMs))), fmt(max(list.map((m) => m.longestMs)))];
      };
      const thrown = [...byFault.restart, ...byFault.kill].reduce((sum, m) => sum + m.uncaught, 0);
      rows.push([factory.name, ...cells("restart"), ...cells("kill"), String(thrown), String(Math.round(tps))]);
      console.error(`${factory.name}: ${JSON.stringify(byFault)}`);
    }
    console.log(
      `\n${concurrency} loops of BEGIN; INSERT; COMMIT; worst of ${rounds} rounds per fault (ms)\n\n${markdownTable(
        [
          "client",
          "restart: all loops committing again",
          "restart: longest transaction",
          "kill: all loops committing again",
          "kill: longest transaction",
          "uncaught errors",
          "steady tx/s",
        ],
        rows,
      )}`,
    );
  } finally {
    await server.stop();
  }
}

if (import.meta.main) await runPgFaultsBench(process.argv.slice(2));
