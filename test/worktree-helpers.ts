/** Real git repositories in temp directories, for `<Worktree>` tests (no network). */
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Runs git in `cwd`; throws with git's stderr when it fails. */
export function git(cwd: string, ...args: string[]): string {
  const proc = Bun.spawnSync(["git", ...args], { cwd, stdout: "pipe", stderr: "pipe" });
  if (proc.exitCode !== 0) throw new Error(`git ${args.join(" ")} failed: ${proc.stderr.toString()}`);
  return proc.stdout.toString();
}

/** git's output as trimmed, non-empty lines. */
export const gitLines = (cwd: string, ...args: string[]) =>
  git(cwd, ...args)
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);

/** A new repository (branch main, one commit with README.md) in its own temp directory; its real path. */
export function tempRepo(): string {
  const repo = join(realpathSync(mkdtempSync(join(tmpdir(), "smithers-wt-"))), "repo");
  mkdirSync(repo);
  git(repo, "init", "-q", "-b", "main");
  git(repo, "config", "user.email", "test@example.com");
  git(repo, "config", "user.name", "Test");
  writeFileSync(join(repo, "README.md"), "# repo\n");
  git(repo, "add", "README.md");
  git(repo, "commit", "-q", "-m", "initial");
  return repo;
}
