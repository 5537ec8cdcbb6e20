/**
 * `<Worktree>`'s work: the git worktree a task runs in, added to the repository of the run's root
 * directory when missing (`git worktree add`), reused when it is already one of that repository's
 * worktrees. Bad input fails before anything is made: a root outside a git repository
 * (WORKTREE_NOT_IN_REPO), a path that exists but is not a worktree of that repository, or one on
 * another branch (WORKTREE_INVALID). A `git worktree add` that fails (WORKTREE_FAILED) leaves no
 * directory or branch of its own behind.
 */
import { existsSync, readdirSync, realpathSync, rmSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { SmithersError } from "../../errors/index.ts";
import type { WorktreeSpec } from "../../jsx/index.ts";

type GitResult = { code: number; stdout: string; stderr: string };

async function git(cwd: string, args: string[]): Promise<GitResult> {
  try {
    const proc = Bun.spawn(["git", ...args], { cwd, stdout: "pipe", stderr: "pipe", stdin: "ignore", env: { ...process.env, GIT_TERMINAL_PROMPT: "0" } });
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    return { code, stdout, stderr };
  } catch (cause) {
    // No git on PATH, or a root directory that does not exist.
    return { code: -1, stdout: "", stderr: (cause as Error)?.message ?? String(cause) };
  }
}

const real = (path: string) => {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
};

type Registered = { path: string; branch: string | undefined };

/** The repository's worktrees (`git worktree list --porcelain`): each path and its branch (undefined when detached). */
async function listWorktrees(repo: string): Promise<Registered[]> {
  const listed = await git(repo, ["worktree", "list", "--porcelain"]);
  if (listed.code !== 0) throw new SmithersError("WORKTREE_FAILED", `git worktree list failed in ${repo}: ${listed.stderr.trim()}`, { repo });
  const found: Registered[] = [];
  for (const block of listed.stdout.split(/\n\n+/)) {
    const path = /^worktree (.+)$/m.exec(block)?.[1];
    if (path) found.push({ path, branch: /^branch refs\/heads\/(.+)$/m.exec(block)?.[1] });
  }
  return found;
}

const findIn = (list: Registered[], path: string) => list.find((w) => real(w.path) === real(path));

async function branchExists(repo: string, branch: string): Promise<boolean> {
  return (await git(repo, ["rev-parse", "--verify", "--quiet", `refs/heads/${branch}`])).code === 0;
}

/** An existing worktree of the repository is used as is, if it is on the branch asked for. */
function accept(found: Registered, path: string, spec: WorktreeSpec, repo: string): string {
  if (spec.branch !== undefined && found.branch !== spec.branch) {
    const on = found.branch === undefined ? "a detached HEAD" : `branch "${found.branch}"`;
    throw new SmithersError("WORKTREE_INVALID", `Worktree ${path} of ${repo} is on ${on}, not on branch "${spec.branch}"`, {
      path,
      repo,
      branch: spec.branch,
      actualBranch: found.branch ?? null,
    });
  }
  return path;
}

async function create(rootDir: string, path: string, spec: WorktreeSpec): Promise<string> {
  const top = await git(rootDir, ["rev-parse", "--show-toplevel"]);
  if (top.code !== 0) {
    throw new SmithersError("WORKTREE_NOT_IN_REPO", `<Worktree path="${spec.path}">: ${rootDir} is not inside a git repository, so no worktree can be added`, {
      rootDir,
      path,
    });
  }
  const repo = top.stdout.trim();
  let registered = findIn(await listWorktrees(repo), path);
  if (registered && !existsSync(path)) {
    // Registered, but its directory was deleted: git forgets it, and it is added again below.
    await git(repo, ["worktree", "prune"]);
    registered = undefined;
  }
  if (registered) return accept(registered, path, spec, repo);
  const existed = existsSync(path);
  if (existed && (!statSync(path).isDirectory() || readdirSync(path).length > 0)) {
    throw new SmithersError("WORKTREE_INVALID", `<Worktree path="${spec.path}">: ${path} exists and is not a worktree of ${repo}`, { path, repo });
  }
  const newBranch = spec.branch !== undefined && !(await branchExists(repo, spec.branch));
  const base = spec.baseBranch ?? ((await branchExists(repo, "main")) ? "main" : "HEAD");
  const args =
    spec.branch === undefined
      ? ["worktree", "add", "--detach", path, base]
      : newBranch
        ? ["worktree", "add", "-b", spec.branch, path, base]
        : ["worktree", "add", path, spec.branch];
  const added = await git(repo, args);
  if (added.code === 0) return path;
  // Another task (or process) may have added it meanwhile: then it is there to use.
  const now = findIn(await listWorktrees(repo), path);
  if (now && existsSync(path)) return accept(now, path, spec, repo);
  if (!existed && existsSync(path)) rmSync(path, { recursive: true, force: true });
  if (newBranch && (await branchExists(repo, spec.branch!))) await git(repo, ["branch", "-D", spec.branch!]);
  throw new SmithersError("WORKTREE_FAILED", `git ${args.join(" ")} failed in ${repo}: ${added.stderr.trim()}`, { path, repo, args });
}

/** In-flight creations by absolute path and branch: tasks of one worktree starting together create it once. */
const inFlight = new Map<string, Promise<string>>();

/**
 * The absolute path of the worktree `spec` names, created when missing. Relative paths resolve
 * against `rootDir`, whose git repository the worktree belongs to.
 * @example
 * const cwd = await ensureWorktree(process.cwd(), { id: undefined, path: "../wt-a", branch: "feature-a", baseBranch: undefined });
 */
export function ensureWorktree(rootDir: string, spec: WorktreeSpec): Promise<string> {
  const path = resolve(rootDir, spec.path);
  const key = `${path}\0${spec.branch ?? ""}`;
  let pending = inFlight.get(key);
  if (!pending) {
    pending = create(rootDir, path, spec).finally(() => inFlight.delete(key));
    inFlight.set(key, pending);
  }
  return pending;
}
