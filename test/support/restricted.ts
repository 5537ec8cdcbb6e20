/**
 * Running a command where it may not write, for tests of read-only databases. Root writes through
 * file permissions, so as root a command runs as `nobody` (setpriv), and a read-only file system
 * is made with a read-only bind mount in a private mount namespace (unshare -m). Each says why it
 * is unavailable where the machine cannot do it, so the tests that need it are skipped with that reason.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const isRoot = process.getuid?.() === 0;

/** Why commands cannot be run as a user that file permissions bind; undefined when they can. */
export const unprivilegedUnavailable: string | undefined =
  isRoot && !Bun.which("setpriv") ? "running as root without setpriv: no unprivileged user to run as" : undefined;

/** Why files of one user cannot be left for another to open here (that needs root); undefined when they can. */
export const otherUserUnavailable: string | undefined = isRoot ? unprivilegedUnavailable : "not root: cannot leave files for another user to open";

/** The prefix that runs a command as a user file permissions bind (none needed when not root). */
export const asUnprivileged: string[] = isRoot ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : [];

const READ_ONLY_BIND = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"';

/** The prefix that runs a command with `dir` mounted read-only (for that command alone). */
export function onReadOnlyFs(dir: string): string[] {
  return ["unshare", "-m", "sh", "-c", READ_ONLY_BIND, dir];
}

function probeReadOnlyFs(): string | undefined {
  if (!Bun.which("unshare")) return "no unshare command: cannot make a read-only file system";
  const dir = mkdtempSync(join(tmpdir(), "smithers-rofs-"));
  try {
    const probe = Bun.spawnSync([...onReadOnlyFs(dir), "sh", "-c", `touch "${dir}/x" 2>/dev/null && echo writable || echo read-only`], {
      stdout: "pipe",
      stderr: "pipe",
    });
    const said = probe.stdout.toString().trim();
    if (said === "read-only") return undefined;
    return `cannot mount a read-only file system here (unshare -m needs CAP_SYS_ADMIN): ${said || probe.stderr.toString().trim()}`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Why a read-only file system cannot be made here; undefined when it can. */
export const readOnlyFsUnavailable: string | undefined = probeReadOnlyFs();
