/** What the bench/compare parent shares between its rows: where things are, and how one child process is run. */
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const HERE = import.meta.dir;
export const BENCH_DIR = resolve(HERE, "..");
export const ROOT = resolve(BENCH_DIR, "..");
// Generated files (`smithers up` workflows, --ours-ref exports) live outside the repo, so no type
// checker or test runner of the project ever picks them up.
export const WORK_DIR = join(tmpdir(), "smithers-bench-compare");
export const PEER_PKG = join(BENCH_DIR, "node_modules", "smithers-orchestrator", "package.json");
export const PEER_CLI = join(BENCH_DIR, "node_modules", "smithers-orchestrator", "src", "bin", "smithers.js");
export const BUN = process.execPath;

/**
 * Where our engine is loaded from: the repo itself, or a commit's src/ exported by --ours-ref;
 * `bundled`: the tree has the bundle `npm pack` builds (dist/bundle), which the CLI rows run.
 */
export type OursTree = { root: string; label: string; bundled: boolean };

/**
 * What `bun` is given to run a `smithers` command of `ours` as an installed package runs it: its
 * bin (bin/smithers.js) starts the bundle under the smithers-bundle condition when the package has
 * one, as a packed one does; a tree without one runs src/cli/index.ts.
 */
export function oursCommand(ours: OursTree): string[] {
  return ours.bundled ? ["--conditions=smithers-bundle", join(ours.root, "dist", "bundle", "smithers.js")] : [join(ours.root, "src", "cli", "index.ts")];
}

export type ChildOutcome = { code: number | null; stdout: string; stderr: string; timedOut: boolean; elapsedMs: number; cpuMs: number };

/** Runs `cmd` to its end (SIGKILL after `timeoutMs`); `elapsedMs` is from spawn to exit, `cpuMs` the child's user + system time. */
export async function runChild(cmd: string[], cwd: string, env: Record<string, string>, timeoutMs: number): Promise<ChildOutcome> {
  const started = performance.now();
  const proc = Bun.spawn(cmd, { cwd, env: { ...process.env, SMITHERS_LOG_LEVEL: "warn", ...env }, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    proc.kill("SIGKILL");
  }, timeoutMs);
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  const elapsedMs = performance.now() - started;
  clearTimeout(timer);
  const usage = proc.resourceUsage()?.cpuTime;
  const cpuMs = usage ? Number(usage.user + usage.system) / 1000 : Number.NaN;
  return { code, stdout, stderr, timedOut, elapsedMs, cpuMs };
}

/** The last lines of a child's output, for an error cell's note. */
export const firstLine = (s: string) => s.trim().split("\n").filter(Boolean).slice(-3).join(" / ").slice(0, 300);

/** The median of `xs` (the mean of the middle two for an even count). */
export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};
export const fmtInt = (x: number) => Math.round(x).toLocaleString("en-US");
export const fmtMs = (x: number) => (x >= 100 ? fmtInt(x) : x >= 10 ? x.toFixed(1) : x >= 1 ? x.toFixed(2) : x.toPrecision(2));
