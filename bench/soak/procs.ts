/**
 * The processes under test: long-lived `smithers` daemons (worker, supervise, serve) that are
 * restarted after each kill -9, `smithers up` runs that are killed but not restarted, and one-shot
 * commands (approve, signal, up --detach). Every process writes its output to its own log file.
 */
import { appendFileSync, closeSync, openSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

export const ROOT = resolve(import.meta.dir, "../..");
export const CLI = join(ROOT, "src/cli/index.ts");

export type Child = { name: string; kind: string; proc: Bun.Subprocess; log: string; startedAtMs: number };

export type Pool = {
  /** Starts (or restarts) the daemon called `name`. */
  startDaemon(name: string): Child;
  /** Starts a process that is not restarted when it ends (an `smithers up`). */
  startTransient(kind: string, args: string[]): Child;
  /** Live processes that may be killed: the daemons and the transient ones still running. */
  killable(): Child[];
  daemon(name: string): Child | undefined;
  /** Runs a one-shot command to its end (killed after `timeoutMs`). */
  run(args: string[], timeoutMs?: number): Promise<{ code: number | null; out: string; timedOut: boolean }>;
  /** SIGKILL; a daemon is started again after `restartAfterMs`, unless the pool is stopping. */
  kill9(child: Child, restartAfterMs: number): Promise<void>;
  /** SIGTERM every daemon and transient process, waits up to `graceMs`, then SIGKILLs what is left; their exit codes. */
  stopAll(graceMs: number): Promise<{ name: string; code: number | null; forced: boolean }[]>;
  logDir: string;
  /** Daemons that exited without being killed or stopped (each is started again, as a service manager would): name, exit code, log file. */
  crashes: { name: string; code: number | null; log: string }[];
};

/** `daemons`: each daemon's name and arguments (after the CLI path). */
export function createPool(o: { logDir: string; env: Record<string, string>; daemons: Record<string, string[]> }): Pool {
  const live = new Map<string, Child>();
  const transient = new Set<Child>();
  const restarts = new Set<ReturnType<typeof setTimeout>>();
  const killed = new WeakSet<Child>();
  const crashes: Pool["crashes"] = [];
  let counter = 0;
  let stopping = false;

  const spawn = (name: string, kind: string, args: string[]): Child => {
    const log = join(o.logDir, `${name}.${++counter}.log`);
    const fd = openSync(log, "a");
    // The child gets its own copy of the descriptor; ours is closed at once.
    const proc = Bun.spawn([process.execPath, CLI, ...args], { cwd: ROOT, env: { ...process.env, ...o.env }, stdin: "ignore", stdout: fd, stderr: fd });
    closeSync(fd);
    // Owner ids in the database name pids (host:pid:…): this file says whose they were.
    appendFileSync(join(o.logDir, "..", "pids.log"), `${proc.pid} ${name} ${new Date().toISOString()} ${args.slice(0, 2).join(" ")}\n`);
    return { name, kind, proc, log, startedAtMs: Date.now() };
  };

  const pool: Pool = {
    logDir: o.logDir,
    crashes,
    startDaemon(name) {
      const args = o.daemons[name];
      if (!args) throw new Error(`no daemon ${name}`);
      const child = spawn(name, name.replace(/-\w+$/, ""), args);
      live.set(name, child);
      void child.proc.exited.then((code) => {
        if (stopping || killed.has(child) || live.get(name) !== child) return;
        crashes.push({ name, code, log: child.log });
        const timer = setTimeout(() => {
          restarts.delete(timer);
          if (!stopping) pool.startDaemon(name);
        }, 1_000);
        restarts.add(timer);
      });
      return child;
    },
    startTransient(kind, args) {
      const child = spawn(`${kind}-${counter + 1}`, kind, args);
      transient.add(child);
      void child.proc.exited.then(() => transient.delete(child));
      return child;
    },
    killable: () => [...[...live.values()].filter((c) => c.proc.exitCode === null && c.proc.signalCode === null), ...transient],
    daemon: (name) => live.get(name),
    async run(args, timeoutMs = 60_000) {
      const proc = Bun.spawn([process.execPath, CLI, ...args], {
        cwd: ROOT,
        env: { ...process.env, ...o.env },
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
      });
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        proc.kill("SIGKILL");
      }, timeoutMs);
      const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
      clearTimeout(timer);
      return { code, out: `${out}${err}`, timedOut };
    },
    async kill9(child, restartAfterMs) {
      killed.add(child);
      child.proc.kill("SIGKILL");
      await child.proc.exited;
      if (live.get(child.name) !== child) return;
      const timer = setTimeout(() => {
        restarts.delete(timer);
        if (!stopping) pool.startDaemon(child.name);
      }, restartAfterMs);
      restarts.add(timer);
    },
    async stopAll(graceMs) {
      stopping = true;
      for (const t of restarts) clearTimeout(t);
      const all = [...live.values(), ...transient].filter((c) => c.proc.exitCode === null && c.proc.signalCode === null);
      for (const c of all) c.proc.kill("SIGTERM");
      const deadline = Bun.sleep(graceMs).then(() => "late" as const);
      return Promise.all(
        all.map(async (c) => {
          const forced = (await Promise.race([c.proc.exited, deadline])) === "late";
          if (forced) c.proc.kill("SIGKILL");
          return { name: c.name, code: await c.proc.exited, forced };
        }),
      );
    },
  };
  return pool;
}

/** Lines of every log that name a problem (errors, locks, stacks), by process kind: what to read first when an invariant fails. */
export function notableLogLines(logDir: string, pattern: RegExp): Map<string, string[]> {
  const byKind = new Map<string, string[]>();
  for (const file of readdirSync(logDir).sort()) {
    const kind = file.replace(/(-\d+)?\.\d+\.log$/, "");
    for (const line of readFileSync(join(logDir, file), "utf8").split("\n")) {
      if (pattern.test(line)) (byKind.get(kind) ?? byKind.set(kind, []).get(kind)!).push(`${file}: ${line.slice(0, 300)}`);
    }
  }
  return byKind;
}
