import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { GROUP_POLL_MS, KILL_GRACE_MS } from "./constants.ts";

/**
 * Process groups of CLI agents. Each CLI runs as the leader of its own group (setsid), so
 * everything it starts (shells, test runners, servers) can be ended with one signal to `-pid`.
 */

/**
 * node:child_process, loaded on the first spawn (synchronously, as spawning is): a process that
 * starts no agent CLI or tool command, like a plain `smithers up`, does not pay for loading it.
 */
export const childProcess = (): typeof import("node:child_process") => require("node:child_process");

/** node:os, loaded on first use: a run that starts no agent CLI or sandbox does not load it. */
export const nodeOs = (): typeof import("node:os") => require("node:os");

/** Groups started here whose members may still be alive; SIGKILLed when this process exits. */
const liveGroups = new Set<number>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Last resort (an engine that exits, Ctrl-C included, while a CLI still runs): no group outlives us.
  process.on("exit", () => {
    for (const pgid of liveGroups) signalGroup(pgid, "SIGKILL");
  });
}

/**
 * Registers a process group this process started (a tool's command), so it is SIGKILLed if this
 * process exits while it runs; `untrackGroup` once it has ended.
 */
export function trackGroup(pgid: number): void {
  installExitHook();
  liveGroups.add(pgid);
}

export function untrackGroup(pgid: number): void {
  liveGroups.delete(pgid);
}

/** The fields of /proc/<pid>/stat after the command name (index 0 is field 3, the state); undefined where unreadable. */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) is in parentheses and may itself contain spaces or ")".
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

/** Whether this system has /proc, asked on first use: every process imports this module (owner ids), few ask. */
let procKnown: boolean | undefined;
function hasProc(): boolean {
  if (procKnown === undefined) {
    try {
      readFileSync("/proc/self/stat", "utf8");
      procKnown = true;
    } catch {
      procKnown = false;
    }
  }
  return procKnown;
}

/**
 * The kernel's start time of process `pid` (field 22 of /proc/<pid>/stat, clock ticks since boot),
 * or undefined where unreadable (no such process, or no /proc). With the pid it names one process
 * for good: a reused pid has another start time.
 */
export function processStartTime(pid: number): string | undefined {
  return statFields(pid)?.[19];
}

/** Whether `pid` is a running process: a zombie (exited, not yet reaped) is not. */
export function processAlive(pid: number): boolean {
  if (hasProc()) {
    const state = statFields(pid)?.[0];
    return state !== undefined && state !== "Z" && state !== "X";
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The running members of process group `pgid` (Linux; elsewhere the leader only, when it runs). */
export function groupMembers(pgid: number): number[] {
  if (!hasProc()) return processAlive(pgid) ? [pgid] : [];
  const members: number[] = [];
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    const fields = statFields(pid);
    if (fields && Number(fields[2]) === pgid && fields[0] !== "Z" && fields[0] !== "X") members.push(pid);
  }
  return members;
}

function groupAlive(pgid: number): boolean {
  if (hasProc()) return groupMembers(pgid).length > 0;
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Sends `signal` to every process of group `pgid`; false when the group has no process left. */
function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

const ending = new Map<number, Promise<void>>();

/**
 * Ends process group `pgid`: SIGTERM to all of it, then SIGKILL to whatever still runs after
 * `graceMs`. Resolves once no member runs. Calling it again while it works returns the same promise.
 */
export function endGroup(pgid: number, graceMs: number = KILL_GRACE_MS): Promise<void> {
  const pending = ending.get(pgid);
  if (pending) return pending;
  const done = (async () => {
    if (groupAlive(pgid)) {
      signalGroup(pgid, "SIGTERM");
      const deadline = Date.now() + graceMs;
      while (groupAlive(pgid) && Date.now() < deadline) await Bun.sleep(GROUP_POLL_MS);
      if (groupAlive(pgid)) {
        signalGroup(pgid, "SIGKILL");
        while (groupAlive(pgid)) await Bun.sleep(GROUP_POLL_MS);
      }
    }
    liveGroups.delete(pgid);
    ending.delete(pgid);
  })();
  ending.set(pgid, done);
  return done;
}

/**
 * For a resume after a crash: SIGKILLs the process group a CLI agent ran in, if it is still there.
 * It needs the leader's recorded start time (Linux /proc; elsewhere none is recorded, and nothing
 * is killed: a pid alone may name an unrelated process by now). Kills when the process with that
 * `pid` (a zombie counts) leads its own group, is not this process's group and has that start
 * time; or when that leader is gone but members of its session and group still run (the kernel
 * gives a pid to no new process while a group or session of that id exists). Otherwise does
 * nothing. Returns whether it sent the signal.
 *
 * @example
 * // from an AgentEvent { type: "process", pid, startTime } persisted before the crash
 * killLeftoverGroup(event.pid, event.startTime);
 */
export function killLeftoverGroup(pid: number, startTime: string | undefined): boolean {
  if (!Number.isInteger(pid) || pid <= 1 || pid === process.pid || startTime === undefined || !hasProc()) return false;
  if (Number(statFields(process.pid)?.[2]) === pid) return false; // our own group
  const fields = statFields(pid);
  if (fields) {
    if (Number(fields[2]) !== pid) return false; // not a group leader: -pid is not its group
    if (fields[19] !== startTime) return false; // another process with a reused pid
  } else {
    // The leader is gone: only members of the session it created (setsid: session id = pid) count.
    const leftovers = groupMembers(pid).filter((member) => Number(statFields(member)?.[3]) === pid);
    if (leftovers.length === 0) return false;
  }
  return signalGroup(pid, "SIGKILL");
}

export type GroupChild = {
  child: ChildProcessWithoutNullStreams;
  pid: number;
  /** processStartTime of the leader, read right after the spawn. */
  startTime: string | undefined;
};

/**
 * Spawns `command` as the leader of a new process group (and session), with piped stdio, and
 * registers the group so this process SIGKILLs it on exit if it still runs then. End it with
 * `endGroup(pid)`; it is unregistered once no member runs.
 */
export function spawnGroup(command: string, args: readonly string[], options: { cwd: string; env: Record<string, string> }): GroupChild {
  const child = childProcess().spawn(command, args, { cwd: options.cwd, env: options.env, detached: true, stdio: ["pipe", "pipe", "pipe"] });
  const pid = child.pid;
  if (pid === undefined) {
    // Spawning failed (the 'error' event says why); nothing to register.
    return { child, pid: -1, startTime: undefined };
  }
  installExitHook();
  liveGroups.add(pid);
  return { child, pid, startTime: processStartTime(pid) };
}
