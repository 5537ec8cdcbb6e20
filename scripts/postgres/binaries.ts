/**
 * Where PostgreSQL's server binaries are and which user runs them. The search is the one
 * ensure.sh makes (pg_config, Debian's /usr/lib/postgresql/<major>/bin, PATH), so the script
 * that installs them and the code that starts a server agree on what "installed" means.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";

export const ENSURE_SCRIPT = join(import.meta.dir, "ensure.sh");
export const ENSURE_PGVECTOR_SCRIPT = join(import.meta.dir, "ensure-pgvector.sh");

/** The unprivileged user that runs the server when this process is root (initdb refuses root). */
export const SERVER_USER = "postgres";

const hasServerBinaries = (dir: string) => existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl"));

/** The directory holding initdb and pg_ctl, or undefined when PostgreSQL is not installed. */
export function findPostgresBinDir(): string | undefined {
  const fromConfig = spawnSync("pg_config", ["--bindir"], { encoding: "utf8" });
  const configured = fromConfig.status === 0 ? fromConfig.stdout.trim() : "";
  if (configured && hasServerBinaries(configured)) return configured;
  const debianRoot = "/usr/lib/postgresql";
  const majors = existsSync(debianRoot)
    ? readdirSync(debianRoot)
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  for (const major of majors) {
    const dir = join(debianRoot, major, "bin");
    if (hasServerBinaries(dir)) return dir;
  }
  for (const dir of (process.env.PATH ?? "").split(":")) {
    if (dir && hasServerBinaries(dir)) return dir;
  }
  return undefined;
}

export const isRoot = () => process.getuid?.() === 0;

/**
 * The binary directory, installing PostgreSQL with ensure.sh first when it is missing and this
 * process is root (as on CI). `found: false` with the reason when it is missing and cannot be installed.
 */
export function ensurePostgresBinDir(): { found: true; binDir: string } | { found: false; reason: string } {
  const found = findPostgresBinDir();
  if (found) return { found: true, binDir: found };
  if (!isRoot()) return { found: false, reason: "no PostgreSQL server binaries (initdb, pg_ctl) found, and not root to install them" };
  const run = spawnSync("bash", [ENSURE_SCRIPT], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  const installed = findPostgresBinDir();
  if (installed) return { found: true, binDir: installed };
  return {
    found: false,
    reason: `${ENSURE_SCRIPT} could not install PostgreSQL (exit ${run.status}): ${run.stderr.trim().split("\n").slice(-5).join(" | ")}`,
  };
}

/**
 * Installs pgvector for the server in `binDir` when it is missing and this process is root (as on
 * CI), so memory on PostgreSQL is tested with the real extension. The reason when it cannot be.
 */
export function ensurePgvector(binDir: string): string | undefined {
  const sharedir = spawnSync(join(binDir, "pg_config"), ["--sharedir"], { encoding: "utf8" });
  const share = sharedir.status === 0 ? sharedir.stdout.trim() : join("/usr/share/postgresql", join(binDir, "..").split("/").at(-1) ?? "");
  if (existsSync(join(share, "extension", "vector.control"))) return undefined;
  if (!isRoot()) return "pgvector is not installed, and not root to install it";
  const run = spawnSync("bash", [ENSURE_PGVECTOR_SCRIPT], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  return run.status === 0 ? undefined : `${ENSURE_PGVECTOR_SCRIPT} failed (exit ${run.status}): ${run.stderr.trim().split("\n").slice(-3).join(" | ")}`;
}

/** uid and gid of the server user, or undefined when there is no such user. */
export function serverUserIds(): { uid: number; gid: number } | undefined {
  const uid = spawnSync("id", ["-u", SERVER_USER], { encoding: "utf8" });
  const gid = spawnSync("id", ["-g", SERVER_USER], { encoding: "utf8" });
  if (uid.status !== 0 || gid.status !== 0) return undefined;
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** The command line that runs `binary args` as the server user: through runuser when root, else as is. */
export function asServerUser(binary: string, args: string[]): [string, string[]] {
  return isRoot() ? ["runuser", ["-u", SERVER_USER, "--", binary, ...args]] : [binary, args];
}
