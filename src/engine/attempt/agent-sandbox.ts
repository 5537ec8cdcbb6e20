/**
 * An agent task's bubblewrap session: the CLI agent (src/agents/cli) starts its process through
 * the ProcessSandbox made here, so its CLI runs under the task's policy like a compute body
 * (sandbox.ts): a fresh work dir as its cwd, a fresh HOME, the file system read-only, no network
 * unless granted, rlimits, and no inherited variable but PATH. One session (one row of
 * `_smithers_sandboxes`) per attempt; each call of the attempt (schema corrections, fallbacks)
 * runs in the same directory, the row keeping the last process's pid and exit.
 */
import { realpathSync, rmSync } from "node:fs";
import { sep } from "node:path";
import type { ProcessSandbox } from "../../agents/index.ts";
import type { SmithersDb } from "../../db/index.ts";
import { SmithersError } from "../../errors/index.ts";
import type { SandboxPolicy } from "../../jsx/index.ts";
import { bwrapArgs, sessionRecorder, sessionRoot, type SessionIds } from "./sandbox.ts";

/** Failures of a CLI that, without network, are most likely its model being out of reach. */
const UNREACHABLE_SHAPED = new Set(["AGENT_CLI_EXIT", "AGENT_CLI_CRASHED", "AGENT_FAILED", "AGENT_TIMEOUT", "AGENT_STREAM_MALFORMED"]);

export type AgentSandboxSession = {
  sandbox: ProcessSandbox;
  /** Ends the session: the row's status, end and error; the directory removed. */
  close(error?: unknown): Promise<void>;
};

export type AgentSandboxOptions = {
  db: SmithersDb;
  policy: SandboxPolicy;
  ids: SessionIds;
  /** The run's root (or the task's worktree): read-only inside unless `writableRoot`. */
  writableRoot: string;
  now: () => number;
};

/** Opens the session (SANDBOX_UNAVAILABLE, recorded, when bubblewrap cannot run). */
export async function openAgentSandbox(o: AgentSandboxOptions): Promise<AgentSandboxSession> {
  const { policy } = o;
  const { record, fail, bwrap: findBwrap } = sessionRecorder(o.db, policy, o.ids, o.now);
  const bwrap = await findBwrap();
  const dirs = sessionRoot();
  // Patches are written in order (a pid before the exit that follows it); close() waits for them.
  let writes: Promise<void> = record({ status: "running", rootDir: dirs.root, startedAtMs: o.now() });
  const write = (patch: Parameters<typeof record>[0]) => (writes = writes.then(() => record(patch)));
  let setUpFailure: string | undefined;

  const sandbox: ProcessSandbox = {
    cwd: dirs.work,
    home: dirs.home,
    scratchDir: dirs.io,
    command: (argv, env) => {
      const executable = realpathSync(argv[0]!);
      const binds = [executable, ...packagesOf(executable)];
      return bwrapArgs(bwrap, dirs.root, o.writableRoot, policy, { command: [executable, ...argv.slice(1)], env, cwd: dirs.work, binds });
    },
    started: (pid) => void write({ pid }),
    ended: (exitCode) => void write({ exitCode }),
    explain: (error) => {
      const details = SmithersError.is(error) ? (error.details as Record<string, unknown> | undefined) : undefined;
      const stderr = typeof details?.stderrTail === "string" ? details.stderrTail : "";
      // bwrap and prlimit name themselves when they cannot set up (no user namespaces, a limit refused).
      if (/^(bwrap|prlimit): /m.test(stderr)) {
        setUpFailure = stderr.trim();
        return new SmithersError("SANDBOX_UNAVAILABLE", `bubblewrap could not start task "${o.ids.nodeId}"'s sandbox: ${setUpFailure}`, {
          nodeId: o.ids.nodeId,
          stderr: setUpFailure,
        });
      }
      if (policy.network || !SmithersError.is(error) || !UNREACHABLE_SHAPED.has(error.code)) return error;
      return new SmithersError(
        "SANDBOX_FAILED",
        `Task "${o.ids.nodeId}"'s agent failed in a sandbox without network (network: false), where no model endpoint can be reached; an agent with a remote model needs sandbox network: true. The agent said: ${error.message}`,
        { nodeId: o.ids.nodeId, network: false, agentError: { code: error.code, message: error.message }, ...details },
      );
    },
  };

  return {
    sandbox,
    close: async (error) => {
      try {
        await writes;
        if (error === undefined) await record({ status: "finished", completedAtMs: o.now() });
        else {
          const e = SmithersError.is(error) ? error : new SmithersError("SANDBOX_FAILED", String((error as Error)?.message ?? error));
          await fail(e);
        }
      } finally {
        rmSync(dirs.root, { recursive: true, force: true });
      }
    },
  };
}

/** The agent's result once its sandbox session is closed with it (a failure recorded on the row). */
export async function settleSession<T>(session: AgentSandboxSession, work: Promise<T>): Promise<T> {
  let value: T;
  try {
    value = await work;
  } catch (error) {
    await session.close(error);
    throw error;
  }
  await session.close();
  return value;
}

/**
 * The node_modules directory an npm-installed CLI runs from, bound in beside its executable: a CLI
 * that is a script (Codex, Gemini) loads its package's other files and its platform binary from
 * sibling packages, which an install under /tmp (a checkout there) would hide behind the tmpfs.
 */
function packagesOf(executable: string): string[] {
  const parts = executable.split(sep);
  const at = parts.lastIndexOf("node_modules");
  return at > 0 ? [parts.slice(0, at + 1).join(sep)] : [];
}
