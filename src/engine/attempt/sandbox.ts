/**
 * A compute task's body in a bubblewrap sandbox: the body's source text runs in a child `bun`
 * (the program in sandbox-child.ts) under `bwrap`, with the whole file system read-only but a fresh directory,
 * no network unless the policy shares the host's, and rlimits set by `prlimit`. The session is
 * recorded in `_smithers_sandboxes`. Nothing here falls back to running unsandboxed: when bwrap is
 * missing or cannot start, the task fails with SANDBOX_UNAVAILABLE.
 */
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { nodeOs } from "../../agents/index.ts";
import { sandboxes, type SmithersDb } from "../../db/index.ts";
import { SmithersError } from "../../errors/index.ts";
import type { SandboxPolicy, TaskRunContext } from "../../jsx/index.ts";
import { sandboxChild } from "./sandbox-child.ts";

/** `SMITHERS_BWRAP` names the bwrap executable (a missing file makes every sandboxed task fail SANDBOX_UNAVAILABLE); else `bwrap` on PATH. */
export function bwrapPath(): string {
  const named = process.env.SMITHERS_BWRAP;
  const found = named === undefined || named === "" ? Bun.which("bwrap") : named;
  const unavailable = (why: string) =>
    new SmithersError("SANDBOX_UNAVAILABLE", `bubblewrap cannot run: ${why}; the task is not run unsandboxed (install it: scripts/bubblewrap/ensure.sh)`, {
      bwrap: found ?? null,
    });
  if (!found) throw unavailable("no bwrap on PATH");
  try {
    accessSync(found, constants.X_OK);
  } catch {
    throw unavailable(`${found} is not an executable file`);
  }
  return found;
}

/** What runs inside a session: its command, its whole environment, its directory, and files to bind in read-only. */
export type SandboxCommand = { command: readonly string[]; env: Readonly<Record<string, string>>; cwd: string; binds: readonly string[] };

/** The bwrap command line that runs `run` in the session at `root` under `policy` (`writableRoot`: the run's root dir). */
export function bwrapArgs(bwrap: string, root: string, writableRoot: string, policy: SandboxPolicy, run: SandboxCommand): string[] {
  const args = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts"];
  // Without `network` the process gets a namespace of its own: only a loopback that is down, so no host, not even 127.0.0.1.
  if (!policy.network) args.push("--unshare-net");
  // The run's root is bound again after /tmp's tmpfs, so a root under /tmp stays visible (read-only unless allowed).
  args.push("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp");
  args.push(policy.writableRoot ? "--bind" : "--ro-bind", writableRoot, writableRoot, "--bind", root, root);
  // The executable, bound again too: installed under /tmp (a checkout there) it would be hidden by the tmpfs.
  for (const file of run.binds) args.push("--ro-bind", file, file);
  // A fresh environment: the engine's (API keys, tokens) stays outside; only what `env` names comes in.
  args.push("--clearenv");
  for (const [key, value] of Object.entries(run.env)) args.push("--setenv", key, value);
  args.push("--chdir", run.cwd, "--");
  const limits = [
    ...(policy.memoryBytes === undefined ? [] : [`--as=${policy.memoryBytes}`]),
    // Soft below hard: the process gets SIGXCPU at its limit, which names the cause, rather than a bare SIGKILL.
    ...(policy.cpuSeconds === undefined ? [] : [`--cpu=${policy.cpuSeconds}:${policy.cpuSeconds + 1}`]),
  ];
  if (limits.length > 0) args.push("prlimit", ...limits, "--");
  args.push(...run.command);
  return args;
}

/** A fresh session directory: `work` (the process's cwd), `home` and `io` (the engine's files for it). */
export function sessionRoot(): { root: string; work: string; home: string; io: string } {
  const root = mkdtempSync(join(nodeOs().tmpdir(), "smithers-sandbox-"));
  const dirs = { root, work: join(root, "work"), home: join(root, "home"), io: join(root, "io") };
  for (const dir of [dirs.work, dirs.home, dirs.io]) mkdirSync(dir);
  return dirs;
}

export type SessionIds = { runId: string; nodeId: string; iteration: number; attempt: number };

/** Writes the attempt's row of `_smithers_sandboxes` (keyed `nodeId:iteration:attempt`) as small patches. */
export function sessionRecorder(db: SmithersDb, policy: SandboxPolicy, ids: SessionIds, now: () => number) {
  const sandboxId = `${ids.nodeId}:${ids.iteration}:${ids.attempt}`;
  const key = { ...ids, sandboxId, runtime: "bubblewrap", configJson: JSON.stringify(policy) };
  const record = (patch: Partial<sandboxes.NewSandboxRow>) => sandboxes.upsertSandbox(db, { ...key, ...patch });
  /** Records the failure and returns the error, to throw. */
  const fail = async (error: SmithersError, patch: Partial<sandboxes.NewSandboxRow> = {}) => {
    await record({ status: "failed", completedAtMs: now(), errorText: `${error.code}: ${error.message}`, ...patch });
    return error;
  };
  /** bwrap's path, or the failure recorded and thrown. */
  const bwrap = async () => {
    try {
      return bwrapPath();
    } catch (e) {
      throw await fail(e as SmithersError);
    }
  };
  return { sandboxId, record, fail, bwrap };
}

export type SandboxedRun = {
  db: SmithersDb;
  policy: SandboxPolicy;
  /** The body: only its source text crosses into the sandbox. */
  body: (ctx: TaskRunContext) => unknown;
  ctx: TaskRunContext;
  now: () => number;
};

/** bwrap ends with 128 + n when its child was killed by signal n. */
function signalName(n: number): string {
  const found = Object.entries(nodeOs().constants.signals).find(([, v]) => v === n);
  return found ? found[0] : `signal ${n}`;
}

type ChildResult = { ok: true; value: unknown } | { ok: false; error: { name: string; message: string; code: string | null } };

/**
 * Runs the body in a sandbox and returns its value. Fails SANDBOX_UNAVAILABLE when bubblewrap
 * (or prlimit for a limit) cannot start, SANDBOX_FAILED when the body throws or its process
 * ends without a value (a limit killed it, or it exited).
 */
export async function runSandboxed(s: SandboxedRun): Promise<unknown> {
  const { ctx, policy } = s;
  const ids = { runId: ctx.runId, nodeId: ctx.nodeId, iteration: ctx.iteration, attempt: ctx.attempt };
  const { sandboxId, record, fail, bwrap: findBwrap } = sessionRecorder(s.db, policy, ids, s.now);
  const bwrap = await findBwrap();
  const { root, work: cwd, io } = sessionRoot();
  try {
    const source = Function.prototype.toString.call(s.body);
    const { signal: _signal, sideEffect: _sideEffect, ...data } = ctx;
    writeFileSync(join(root, "io", "request.json"), JSON.stringify({ source, ctx: { ...data, cwd } }));
    // The child program goes in as source too: nothing of Smithers' files needs to be found from inside.
    writeFileSync(join(root, "io", "child.mjs"), `await (${sandboxChild.toString()})(process.argv[2]);\n`);
    const bun = realpathSync(process.execPath);
    const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", TMPDIR: "/tmp", HOME: cwd };
    const command = { command: [bun, join(io, "child.mjs"), io], env, cwd, binds: [bun] };
    const proc = Bun.spawn(bwrapArgs(bwrap, root, ctx.cwd, policy, command), { stdin: "ignore", stdout: "inherit", stderr: "pipe" });
    const stop = () => proc.kill("SIGKILL");
    ctx.signal.addEventListener("abort", stop, { once: true });
    if (ctx.signal.aborted) stop();
    await record({ status: "running", rootDir: root, pid: proc.pid, startedAtMs: s.now() });
    const [exitCode, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
    ctx.signal.removeEventListener("abort", stop);
    const ended = { exitCode, completedAtMs: s.now() };
    const details = { nodeId: ctx.nodeId, sandboxId, exitCode, signal: proc.signalCode ?? null, stderr: stderr.slice(-2000) };
    if (!existsSync(join(root, "io", "started"))) {
      // bwrap and prlimit name themselves when they cannot set up (no user namespaces, a limit refused); else the child bun died starting (too little memoryBytes).
      const setUp = /^(bwrap|prlimit): /m.test(stderr);
      const why = stderr.trim() || `exit ${exitCode}`;
      const error = setUp
        ? new SmithersError("SANDBOX_UNAVAILABLE", `bubblewrap could not start task "${ctx.nodeId}"'s sandbox: ${why}`, details)
        : new SmithersError("SANDBOX_FAILED", `Task "${ctx.nodeId}"'s sandboxed bun did not start (is memoryBytes too low?): ${why}`, details);
      throw await fail(error, ended);
    }
    const resultFile = join(root, "io", "result.json");
    if (!existsSync(resultFile)) {
      const how = proc.signalCode ? `was killed by ${proc.signalCode}` : exitCode > 128 ? `was killed by ${signalName(exitCode - 128)}` : `exited ${exitCode}`;
      throw await fail(
        new SmithersError(
          "SANDBOX_FAILED",
          `Task "${ctx.nodeId}"'s sandboxed body ${how} before returning (a limit of its policy, or the body exiting)`,
          details,
        ),
        ended,
      );
    }
    const result = JSON.parse(readFileSync(resultFile, "utf8")) as ChildResult;
    if (!result.ok) {
      const { message, code, name } = result.error;
      throw await fail(
        new SmithersError("SANDBOX_FAILED", `Task "${ctx.nodeId}" failed in its sandbox: ${name}: ${message}`, {
          ...details,
          bodyError: result.error,
          bodyCode: code,
        }),
        ended,
      );
    }
    await record({ status: "finished", ...ended });
    return result.value;
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
