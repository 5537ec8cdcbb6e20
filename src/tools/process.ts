/**
 * Running an executable for a tool: no shell, its own process group (session), output of stdout
 * and stderr interleaved and capped, and the whole group killed with SIGKILL at the timeout, at
 * the attempt's stop, and when the main process exits (so a call leaves no process behind).
 */
import { SmithersError } from "../errors/index.ts";
import { childProcess, trackGroup, untrackGroup } from "../agents/index.ts";

export type ProcessOptions = {
  /** Named in errors: `bash`, `grep`. */
  toolName: string;
  cwd: string;
  timeoutMs: number;
  maxOutputBytes: number;
  signal?: AbortSignal | undefined;
};

export type ProcessResult = { exitCode: number | null; exitSignal: NodeJS.Signals | null; output: string };

/** Once the main process has exited and its group was killed, how long to wait for the pipes to close. */
const PIPE_CLOSE_GRACE_MS = 1_000;

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // the group is already gone
  }
}

/** Collects output up to `max` bytes, counting what it drops. */
function outputBuffer(max: number) {
  const chunks: Buffer[] = [];
  let kept = 0;
  let total = 0;
  return {
    add(chunk: Buffer) {
      total += chunk.length;
      if (kept >= max) return;
      const part = chunk.length > max - kept ? chunk.subarray(0, max - kept) : chunk;
      chunks.push(part);
      kept += part.length;
    },
    text(): string {
      const text = Buffer.concat(chunks).toString("utf8");
      return total > kept ? `${text}\n[output truncated: ${kept} of ${total} bytes shown]` : text;
    },
  };
}

/**
 * Runs `cmd args` and resolves with its exit and output; rejects with TOOL_TIMEOUT, the stop
 * reason, or TOOL_FAILED when it cannot be started.
 * @example
 * const { exitCode, output } = await runProcess("ls", ["-la"], { toolName: "bash", cwd, timeoutMs: 60_000, maxOutputBytes: 200_000 });
 */
export function runProcess(cmd: string, args: readonly string[], options: ProcessOptions): Promise<ProcessResult> {
  return new Promise((resolvePromise, reject) => {
    const output = outputBuffer(options.maxOutputBytes);
    const child = childProcess().spawn(cmd, args, { cwd: options.cwd, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    if (child.pid !== undefined) trackGroup(child.pid); // killed with this process if it exits first
    let failure: unknown;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let graceTimer: ReturnType<typeof setTimeout> | undefined;
    const stopAll = (reason: unknown) => {
      if (exit) return; // it finished in time; only its pipes are still closing
      failure ??= reason;
      killGroup(child.pid);
    };
    const timer = setTimeout(
      () =>
        stopAll(
          new SmithersError("TOOL_TIMEOUT", `${options.toolName} "${cmd}" ran past ${options.timeoutMs} ms and was killed with its process group`, {
            toolName: options.toolName,
            timeoutMs: options.timeoutMs,
          }),
        ),
      options.timeoutMs,
    );
    const onAbort = () => {
      const reason = options.signal?.reason;
      stopAll(
        SmithersError.is(reason)
          ? reason
          : new SmithersError("TASK_CANCELLED", `${options.toolName} "${cmd}" was killed: its attempt was stopped`, { cause: reason }),
      );
    };
    if (options.signal?.aborted) onAbort();
    options.signal?.addEventListener("abort", onAbort, { once: true });
    let settled = false;
    const settle = () => {
      if (settled) return;
      settled = true;
      if (child.pid !== undefined) untrackGroup(child.pid); // killed on exit already (see below)
      clearTimeout(timer);
      clearTimeout(graceTimer);
      options.signal?.removeEventListener("abort", onAbort);
      if (failure !== undefined) reject(failure);
      else resolvePromise({ exitCode: exit?.code ?? null, exitSignal: exit?.signal ?? null, output: output.text() });
    };
    child.stdout.on("data", (chunk: Buffer) => output.add(chunk));
    child.stderr.on("data", (chunk: Buffer) => output.add(chunk));
    child.on("error", (error) => {
      failure ??= new SmithersError("TOOL_FAILED", `${options.toolName} could not run "${cmd}": ${error.message}`, {
        toolName: options.toolName,
        cause: error,
      });
      settle();
    });
    child.on("exit", (code, signal) => {
      exit = { code, signal };
      killGroup(child.pid); // what it started in the background goes with it
      // A process that left its group may still hold the pipes: stop waiting for them after a grace period.
      graceTimer = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        settle();
      }, PIPE_CLOSE_GRACE_MS);
    });
    child.on("close", settle);
  });
}
