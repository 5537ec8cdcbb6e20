/**
 * Owner ids and what a process can tell about an owner without its heartbeat. An owner id is
 * `host:pid:random:place.start`: `place` names the kernel boot and the pid and network namespaces
 * the owner ran in, `start` the kernel's start time of its process. A hostname alone does not
 * name a host (containers and namespaces share one), and a pid alone does not name a process (pids
 * are reused), so only an owner in this very place, whose pid still has that start time, is
 * judged by its process; every other owner is judged by its heartbeat.
 */
import { readFileSync, readlinkSync } from "node:fs";
import { DEFAULT_HEARTBEAT_MS, MISSED_BEATS_BEFORE_STALE } from "../../db/index.ts";
import { processStartTime } from "../../agents/cli/process-group.ts";

function readOr(read: () => string): string {
  try {
    return read().trim();
  } catch {
    return "";
  }
}

/**
 * Where this process runs: the boot (a new one after a reboot, another on another machine) and
 * the pid namespace (where its pid means it) and network namespace (a process reaching the
 * database through another network can be cut off while alive) it runs in. Empty without /proc:
 * then no other process can be judged here.
 */
function placeOfThisProcess(): string {
  const boot = readOr(() => readFileSync("/proc/sys/kernel/random/boot_id", "utf8"));
  if (!boot) return "";
  const namespaces = ["pid", "net"].map((ns) => readOr(() => readlinkSync(`/proc/self/ns/${ns}`))).join("|");
  return new Bun.CryptoHasher("sha256").update(`${boot}|${namespaces}`).digest("hex").slice(0, PLACE_LENGTH);
}

let host: string | undefined;
/**
 * This machine's name as os.hostname() gives it, read once per process (as its place is). On Linux
 * from /proc (the kernel's UTS name, which gethostname returns), so starting a run loads no node:os.
 */
function hostname(): string {
  host ??= readOr(() => readFileSync("/proc/sys/kernel/hostname", "utf8")) || (require("node:os") as typeof import("node:os")).hostname();
  return host;
}

const PLACE_LENGTH = 16;
let place: string | undefined;
const thisPlace = () => (place ??= placeOfThisProcess());

/**
 * The owner id process `pid` of this place has (its start time read from /proc), tagged `tag`;
 * without /proc, `host:pid:tag`, which no other process judges by its pid.
 * @example ownerIdOf(process.pid, "a1b2c3d4") // "box:4242:a1b2c3d4:9f86d081884c7d65.123456"
 */
export function ownerIdOf(pid: number, tag: string): string {
  const start = pid === process.pid ? (ownStart ??= processStartTime(pid)) : processStartTime(pid);
  return thisPlace() && start ? `${hostname()}:${pid}:${tag}:${thisPlace()}.${start}` : `${hostname()}:${pid}:${tag}`;
}

let ownStart: string | undefined;

/** A fresh owner id for this process, so a later process can tell whether the owner is still alive. */
export function newOwnerId(): string {
  return ownerIdOf(process.pid, crypto.randomUUID().slice(0, 8));
}

/** Owner ids of the runs this process is executing right now. */
export const ACTIVE_OWNERS = new Set<string>();

/**
 * What this process can tell about a run's owner without its heartbeat: `true` when the owner is
 * a live process here (this process, executing the run; or another process in this place whose
 * pid still has the recorded start time), `false` when it provably is not, `undefined` when it
 * ran elsewhere or its id does not say where (an id from a version before places: host:pid:random).
 */
export function ownerProcessAlive(ownerId: string | null): boolean | undefined {
  if (!ownerId) return false;
  if (ACTIVE_OWNERS.has(ownerId)) return true;
  const [host, pidText, , where] = ownerId.split(":");
  const pid = Number(pidText);
  if (host !== hostname() || !Number.isInteger(pid) || pid <= 0 || where === undefined || !thisPlace()) return undefined;
  const dot = where.lastIndexOf(".");
  const recordedStart = where.slice(dot + 1);
  if (dot < 0 || where.slice(0, dot) !== thisPlace() || !recordedStart) return undefined;
  // Same place: the pid names the owner only while it has the owner's start time (else it died,
  // and the pid may be another process's by now); this process is the owner only while executing it.
  return processStartTime(pid) === recordedStart && pid !== process.pid;
}

/** How old a heartbeat may be before its owner counts as gone: MISSED_BEATS_BEFORE_STALE of the run's own beats. */
export function heartbeatTimeoutMs(heartbeatMs: number | null | undefined): number {
  return MISSED_BEATS_BEFORE_STALE * (heartbeatMs ?? DEFAULT_HEARTBEAT_MS);
}

/**
 * Whether a run's owner may still be executing it: decided by the process where this process can
 * tell (a live owner whose heartbeat is late, e.g. a task blocking its event loop, still owns the
 * run), else by the heartbeat's age against the run's own beat (`heartbeatMs`, stored on the run).
 * `nowMs` must come from the clock that wrote the heartbeat (the database's, see databaseNow).
 */
export function ownerAlive(ownerId: string | null, heartbeatAtMs: number | null, nowMs: number, heartbeatMs?: number | null): boolean {
  const local = ownerProcessAlive(ownerId);
  if (local !== undefined) return local;
  return heartbeatAtMs !== null && nowMs - heartbeatAtMs < heartbeatTimeoutMs(heartbeatMs);
}
