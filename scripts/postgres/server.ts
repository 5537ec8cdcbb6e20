/**
 * A throwaway PostgreSQL server for tests and benches: initdb into a fresh temporary directory,
 * pg_ctl on a free loopback port, removed again by stop() or, at the latest, when this process
 * exits. Never a shared long-lived server; nothing listens beyond 127.0.0.1 unless a test names
 * another local address (`hosts`, e.g. a veth to a network namespace).
 */
import { type ChildProcess, type SpawnSyncReturns, spawn, spawnSync } from "node:child_process";
import { appendFileSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { asServerUser, ensurePostgresBinDir, isRoot, SERVER_USER, serverUserIds } from "./binaries.ts";

export type PostgresServerOptions = {
  /**
   * Durable writes (fsync, full-page writes, a synced initdb) as a production server has them.
   * Off by default: tests do not survive a power cut and run much faster without; benches turn it on.
   */
  fsync?: boolean;
  /** max_connections; 200 by default so concurrent-worker tests have room. */
  maxConnections?: number;
  /** Local IPv4 addresses to listen on besides 127.0.0.1, each trusted (pg_hba.conf) for clients of its own address. */
  hosts?: readonly string[];
};

export type PostgresServer = {
  /** postgres://smithers@127.0.0.1:<port>/postgres, the maintenance database. */
  url: string;
  dataDir: string;
  port: number;
  /** The postmaster's pid (from postmaster.pid; a restart changes it). */
  readonly pid: number;
  /** Stops the server (fast, then immediate) and removes its directory; a second call does nothing. */
  stop(): Promise<void>;
  /** Creates an empty database (a fresh name unless one is given) and returns its URL. */
  createDatabase(name?: string): Promise<string>;
  /**
   * `pg_ctl restart -m fast`: every session is ended (open transactions rolled back) and the server
   * is back on the same port when this resolves. For fault tests: never restart a shared server.
   */
  restart(): Promise<void>;
};

const SUPERUSER = "smithers";
const START_ATTEMPTS = 5;

/** Servers not yet stopped, ended synchronously when the process exits so none outlives a test run. */
const live = new Map<string, () => void>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const stopNow of live.values()) stopNow();
  });
}

/** A port free on 127.0.0.1 right now; another process may still take it first, so starts retry. */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

/** Runs a server binary as the server user and resolves with its exit code and output. */
function run(binary: string, args: string[], cwd: string): Promise<{ code: number; output: string }> {
  const [command, argv] = asServerUser(binary, args);
  return new Promise((resolve, reject) => {
    // cwd: the server user may not be able to enter the caller's directory (root's home).
    const child = spawn(command, argv, { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code: code ?? -1, output }));
  });
}

function runSync(binary: string, args: string[], cwd: string): SpawnSyncReturns<string> {
  const [command, argv] = asServerUser(binary, args);
  return spawnSync(command, argv, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 30_000 });
}

function logTail(logFile: string, lines = 20): string {
  try {
    return readFileSync(logFile, "utf8").trim().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no server log)";
  }
}

function postmasterPid(dataDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Cleans up after this process however it ends: `bun test` runs no "exit" handlers, and SIGKILL or
 * Ctrl-C runs none either. A detached shell holds the read end of a pipe only this process writes;
 * the kernel closes it when this process dies, the shell's `read` (a builtin: no second process to
 * outlive it) sees end of file, and the shell stops the
 * server and removes its directory. stop() kills the shell first, so a stopped server is not touched.
 */
function startWatchdog(pgCtl: string, dataDir: string, root: string): ChildProcess {
  const [command, argv] = asServerUser(pgCtl, ["stop", "-m", "immediate", "-D", dataDir]);
  const shellQuote = (a: string) => `'${a.replaceAll("'", `'\\''`)}'`;
  const script = `read -r _; ${[command, ...argv].map(shellQuote).join(" ")} >/dev/null 2>&1; rm -rf ${shellQuote(root)}`;
  const child = spawn("sh", ["-c", script], { cwd: "/", detached: true, stdio: ["pipe", "ignore", "ignore"] });
  // Neither the shell nor its pipe may keep a script that never calls stop() from exiting.
  child.unref();
  (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  return child;
}

/**
 * Starts a PostgreSQL server in a new temporary directory. As root, the directory is handed to
 * the `postgres` system user and the server runs as that user. Throws when the binaries are
 * missing and cannot be installed, or when the server does not start (with its log's tail).
 *
 * @example
 * const pg = await startPostgres();
 * const url = await pg.createDatabase();
 * // … connect to url …
 * await pg.stop();
 */
export async function startPostgres(options: PostgresServerOptions = {}): Promise<PostgresServer> {
  const found = ensurePostgresBinDir();
  if (!found.found) throw new Error(`PostgreSQL is not available: ${found.reason}`);
  const binDir = found.binDir;
  const pgCtl = join(binDir, "pg_ctl");
  // SMITHERS_PG_TMPDIR: set by the test suite, whose own TMPDIR is removed after its last test,
  // while this directory must outlive the test process (the watchdog stops the server from it).
  const root = mkdtempSync(join(process.env.SMITHERS_PG_TMPDIR ?? tmpdir(), "smithers-pg-"));
  const dataDir = join(root, "data");
  const logFile = join(root, "server.log");
  if (isRoot()) {
    const ids = serverUserIds();
    if (!ids) {
      rmSync(root, { recursive: true, force: true });
      throw new Error(`PostgreSQL cannot run as root and there is no "${SERVER_USER}" user to run it as`);
    }
    chownSync(root, ids.uid, ids.gid);
  }
  const fail = (message: string, detail: string): never => {
    rmSync(root, { recursive: true, force: true });
    throw new Error(`${message}\n${detail}`);
  };

  const durable = options.fsync === true;
  const initArgs = ["-D", dataDir, "-A", "trust", "-U", SUPERUSER, "-E", "UTF8", "--locale=C", ...(durable ? [] : ["--no-sync"])];
  const init = await run(join(binDir, "initdb"), initArgs, root);
  if (init.code !== 0) fail(`initdb failed (exit ${init.code})`, init.output.trim());
  const hosts = options.hosts ?? [];
  for (const host of hosts) if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(host)) fail(`Not an IPv4 address: ${host}`, "");
  // Clients on the other side of such an address's link (its /24) may connect, as loopback ones do.
  if (hosts.length > 0) appendFileSync(join(dataDir, "pg_hba.conf"), hosts.map((h) => `host all all ${h.replace(/\.\d+$/, ".0")}/24 trust\n`).join(""));

  let port = 0;
  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    const settings = [
      `-c listen_addresses=${["127.0.0.1", ...hosts].join(",")}`,
      `-p ${port}`,
      `-k '${root}'`,
      `-c max_connections=${options.maxConnections ?? 200}`,
      ...(durable ? [] : ["-c fsync=off", "-c full_page_writes=off", "-c synchronous_commit=off"]),
    ];
    const start = await run(pgCtl, ["start", "-w", "-t", "60", "-D", dataDir, "-l", logFile, "-o", settings.join(" ")], root);
    if (start.code === 0) break;
    // Another process took the port between the probe and the bind: try a new one.
    const raced = /could not bind|address already in use|could not create any TCP\/IP sockets/i.test(logTail(logFile, 50));
    if (!raced || attempt >= START_ATTEMPTS)
      fail(`pg_ctl start failed (exit ${start.code}) on port ${port}`, `${start.output.trim()}\n--- ${logFile}:\n${logTail(logFile)}`);
  }

  let pid = postmasterPid(dataDir) ?? fail("PostgreSQL started but wrote no postmaster.pid", logTail(logFile));
  const watchdog = startWatchdog(pgCtl, dataDir, root);
  const url = `postgres://${SUPERUSER}@127.0.0.1:${port}/postgres`;
  let admin: postgres.Sql | undefined;
  let databases = 0;
  let stopped = false;

  const stopNow = () => {
    if (stopped) return;
    stopped = true;
    live.delete(root);
    watchdog.kill("SIGKILL");
    if (runSync(pgCtl, ["stop", "-w", "-m", "fast", "-D", dataDir], root).status !== 0) {
      if (runSync(pgCtl, ["stop", "-w", "-m", "immediate", "-D", dataDir], root).status !== 0 && existsSync(`/proc/${pid}`)) {
        process.kill(pid, "SIGKILL");
      }
    }
    rmSync(root, { recursive: true, force: true });
  };
  installExitHook();
  live.set(root, stopNow);

  return {
    url,
    dataDir,
    port,
    get pid() {
      return pid;
    },
    async restart() {
      await admin?.end({ timeout: 1 }).catch(() => undefined); // its connection does not survive the restart
      admin = undefined;
      // -l: without it the new postmaster writes to pg_ctl's output, whose pipe would never close.
      const restarted = await run(pgCtl, ["restart", "-w", "-t", "60", "-m", "fast", "-D", dataDir, "-l", logFile], root);
      if (restarted.code !== 0)
        throw new Error(`pg_ctl restart failed (exit ${restarted.code})\n${restarted.output.trim()}\n--- ${logFile}:\n${logTail(logFile)}`);
      pid = postmasterPid(dataDir) ?? pid;
    },
    async stop() {
      await admin?.end({ timeout: 5 });
      admin = undefined;
      stopNow();
    },
    async createDatabase(name?: string) {
      const database = name ?? `db_${process.pid}_${++databases}`;
      // Names are interpolated into CREATE DATABASE, so only plain identifiers are accepted.
      if (!/^[a-z_][a-z0-9_]{0,62}$/.test(database)) throw new Error(`Not a plain database name: ${database}`);
      admin ??= postgres(url, { max: 1, onnotice: () => {} });
      await admin.unsafe(`CREATE DATABASE "${database}"`);
      return `postgres://${SUPERUSER}@127.0.0.1:${port}/${database}`;
    },
  };
}
