import { StringDecoder } from "node:string_decoder";
import { SmithersError, type SmithersErrorCode } from "../../errors/index.ts";
import type { AgentEvent, AgentGenerateArgs, AgentUsage } from "../types.ts";
import { AUTH_FAILURE_PATTERN, MALFORMED_NOTICES, STDERR_TAIL_CHARS, STREAMS_CLOSE_MS } from "./constants.ts";
import { endGroup, spawnGroup } from "./process-group.ts";

/** What a CLI's stream said once it ended. */
export type StreamOutcome = {
  /** The final reply text ("" when there was none). */
  text: string;
  /** The stream reached its final record (a result line, turn.completed, …). */
  complete: boolean;
  /** The CLI reported a failure in its stream. */
  error?: string;
  /** The stream itself marked the failure as a login / credential one. */
  authError?: boolean;
  usage?: AgentUsage;
};

/** How a CLI's process ended, for a parser that recognises its failures. */
export type CliEnding = { exitCode: number | null; signal: NodeJS.Signals | null; stderr: string };

/** A failure a parser recognised (a code more precise than AGENT_CLI_EXIT): thrown with the call's details added. */
export type RecognisedFailure = { code: SmithersErrorCode; message: string; details?: Record<string, unknown> };

/**
 * Turns the JSON records of one CLI's stdout into events and, at the end, an outcome. A record
 * that shows the call cannot succeed may throw: the CLI's group is ended and the call rejects
 * with that error at once.
 */
export interface StreamParser {
  record(value: Record<string, unknown>, emit: (event: AgentEvent) => void): void;
  outcome(): StreamOutcome;
  /** The failure of a call that failed, when the parser knows its kind from the stream or stderr. */
  failure?(ending: CliEnding): RecognisedFailure | undefined;
}

export type CliInvocation = {
  agent: string;
  /** The resolved executable and the name it was asked by (for messages and the process event). */
  executable: string;
  binary: string;
  args: string[];
  stdin: string;
  cwd: string;
  env: Record<string, string>;
  limits: { totalMs?: number; idleMs?: number };
  maxOutputBytes: number;
  parser: StreamParser;
  call: AgentGenerateArgs;
  /** Exit codes that mean a login failure (gemini: 41). */
  authExitCodes?: readonly number[];
};

/** A string that keeps at most `maxBytes` of UTF-8 (the start; the rest is dropped and flagged). */
export class CappedText {
  value = "";
  truncated = false;
  private bytes = 0;
  constructor(private readonly maxBytes: number) {}
  append(text: string): void {
    if (this.truncated) return;
    const size = Buffer.byteLength(text);
    if (this.bytes + size <= this.maxBytes) {
      this.value += text;
      this.bytes += size;
      return;
    }
    const room = this.maxBytes - this.bytes;
    this.value += Buffer.from(text)
      .subarray(0, room)
      .toString("utf8")
      .replace(/\uFFFD$/, "");
    this.bytes = this.maxBytes;
    this.truncated = true;
  }
  reset(): void {
    this.value = "";
    this.bytes = 0;
    this.truncated = false;
  }
}

/**
 * Streamed assistant text cut into segments (a new step or a tool call ends one): a CLI's final
 * answer is its last segment that had any text.
 */
export class LastSegment {
  readonly current: CappedText;
  private last = "";
  constructor(maxBytes: number) {
    this.current = new CappedText(maxBytes);
  }
  close(): void {
    if (this.current.value !== "") this.last = this.current.value;
    this.current.reset();
  }
  /** Closes the open segment; the last non-empty one. */
  text(): string {
    this.close();
    return this.last;
  }
}

function quote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", "'\\''")}'`;
}

function tail(text: string, chars: number): string {
  return text.length <= chars ? text : text.slice(text.length - chars);
}

/**
 * Runs one CLI call to its end in its own process group and returns what its stream said.
 * Rejects with the abort signal's reason, AGENT_TIMEOUT, AGENT_AUTH_FAILED, AGENT_CLI_EXIT,
 * AGENT_FAILED (an error result with exit code 0) or AGENT_STREAM_MALFORMED (exit 0, no result);
 * every way out ends the whole group first.
 */
export function runCli(run: CliInvocation): Promise<StreamOutcome> {
  const { call, agent } = run;
  const signal = call.abortSignal;
  if (signal?.aborted) return Promise.reject(signal.reason);

  return new Promise<StreamOutcome>((resolvePromise, rejectPromise) => {
    const { child, pid, startTime } = spawnGroup(run.executable, run.args, { cwd: run.cwd, env: run.env });
    let stop: { kind: "abort" } | { kind: "timeout"; limit: "total" | "idle"; ms: number } | { kind: "error"; error: unknown } | undefined;
    let spawnError: NodeJS.ErrnoException | undefined;
    let totalTimer: ReturnType<typeof setTimeout> | undefined;
    let idleTimer: ReturnType<typeof setTimeout> | undefined;
    let settled = false;

    // Ended once: signalling the group again later (the pid may be reused by then) is never right.
    let ended: Promise<void> | undefined;
    const end = () => (ended ??= pid > 0 ? endGroup(pid) : Promise.resolve());
    const halt = (reason: NonNullable<typeof stop>) => {
      stop ??= reason;
      void end();
    };
    // A callback that throws inside a stream handler would be an uncaught exception: end the call with it instead.
    const guard = (fn: () => void) => {
      try {
        fn();
      } catch (error) {
        halt({ kind: "error", error });
      }
    };
    const onAbort = () => halt({ kind: "abort" });
    const armIdle = () => {
      if (run.limits.idleMs === undefined) return;
      clearTimeout(idleTimer);
      idleTimer = setTimeout(() => halt({ kind: "timeout", limit: "idle", ms: run.limits.idleMs! }), run.limits.idleMs);
    };

    const emit = (event: AgentEvent) => guard(() => call.onEvent?.(event));
    let malformed = 0;
    let records = 0;
    const noteMalformed = (line: string) => {
      malformed++;
      if (malformed <= MALFORMED_NOTICES) {
        guard(() => call.onStderr?.(`smithers: ${agent}: skipped a stdout line that is not a JSON record: ${tail(line, 200)}\n`));
      }
    };
    const takeLine = (line: string) => {
      const trimmed = line.trim();
      if (trimmed === "") return;
      let value: unknown;
      try {
        value = JSON.parse(trimmed);
      } catch {
        return noteMalformed(trimmed);
      }
      if (typeof value !== "object" || value === null || Array.isArray(value)) return noteMalformed(trimmed);
      records++;
      guard(() => run.parser.record(value as Record<string, unknown>, emit));
    };

    // stdout: split into lines; a line longer than maxOutputBytes is dropped (counted as malformed).
    const decoder = new StringDecoder("utf8");
    let pending = "";
    let dropping = false;
    const tooLong = (s: string) => s.length > run.maxOutputBytes || (s.length * 3 > run.maxOutputBytes && Buffer.byteLength(s) > run.maxOutputBytes);
    const oversized = (line: string) => noteMalformed(`${line.slice(0, 200)}… (a line longer than maxOutputBytes ${run.maxOutputBytes})`);
    const onStdout = (chunk: Buffer) => {
      armIdle();
      const text = decoder.write(chunk);
      guard(() => call.onStdout?.(text));
      const parts = (pending + text).split("\n");
      pending = parts.pop() ?? "";
      for (const line of parts) {
        if (dropping) dropping = false;
        else if (tooLong(line)) oversized(line);
        else takeLine(line);
      }
      if (tooLong(pending)) {
        if (!dropping) oversized(pending);
        dropping = true;
        pending = "";
      }
    };
    const stderrDecoder = new StringDecoder("utf8");
    let stderr = "";
    const stderrKeep = Math.min(run.maxOutputBytes, 64 * 1024);
    const onStderr = (chunk: Buffer) => {
      armIdle();
      const text = stderrDecoder.write(chunk);
      guard(() => call.onStderr?.(text));
      stderr = tail(stderr + text, stderrKeep);
    };

    child.stdout.on("data", onStdout);
    child.stderr.on("data", onStderr);
    child.stdin.on("error", () => {}); // a CLI that exits without reading all of stdin: EPIPE is not our failure
    child.on("error", (error: NodeJS.ErrnoException) => {
      spawnError ??= error;
      if (pid <= 0) void finish(null, null); // never started: no 'close' to wait for
    });
    // When the leader exits, end what it left running in its group (background shells, servers).
    child.on("exit", () => {
      void end().then(() => {
        const closer = setTimeout(() => {
          child.stdout.destroy();
          child.stderr.destroy();
        }, STREAMS_CLOSE_MS);
        child.once("close", () => clearTimeout(closer));
      });
    });
    child.on("close", (code: number | null, exitSignal: NodeJS.Signals | null) => {
      void finish(code, exitSignal);
    });

    if (pid > 0) {
      const command = [run.binary, ...run.args].map(quote).join(" ");
      emit({ type: "process", pid, command: command.length > 2000 ? `${command.slice(0, 2000)}…` : command, startTime });
      child.stdin.end(run.stdin);
      signal?.addEventListener("abort", onAbort, { once: true });
      if (run.limits.totalMs !== undefined) {
        totalTimer = setTimeout(() => halt({ kind: "timeout", limit: "total", ms: run.limits.totalMs! }), run.limits.totalMs);
      }
      armIdle();
    }

    async function finish(code: number | null, exitSignal: NodeJS.Signals | null): Promise<void> {
      if (settled) return;
      settled = true;
      clearTimeout(totalTimer);
      clearTimeout(idleTimer);
      signal?.removeEventListener("abort", onAbort);
      const rest = pending + decoder.end();
      // The rest of an oversized line (dropping) was counted already.
      if (!dropping && tooLong(rest)) oversized(rest);
      else if (!dropping) takeLine(rest);
      stderr = tail(stderr + stderrDecoder.end(), stderrKeep);
      await end();
      try {
        resolvePromise(judge(code, exitSignal));
      } catch (error) {
        rejectPromise(error);
      }
    }

    function judge(code: number | null, exitSignal: NodeJS.Signals | null): StreamOutcome {
      if (stop?.kind === "abort") throw signal?.reason;
      if (stop?.kind === "error") throw stop.error;
      const outcome = run.parser.outcome();
      const partialText = tail(outcome.text, 2000);
      const stderrTail = tail(stderr, STDERR_TAIL_CHARS);
      // What the CLI reported consuming before it failed: still spent, and counted by the engine.
      const spent = outcome.usage ? { usage: outcome.usage } : {};
      if (stop?.kind === "timeout") {
        throw new SmithersError(
          "AGENT_TIMEOUT",
          `${agent}: ${stop.limit === "idle" ? "printed nothing for" : "did not finish within"} ${stop.ms} ms; its process group was ended`,
          {
            agent,
            limit: stop.limit,
            ms: stop.ms,
            partialText,
            stderrTail,
            ...spent,
          },
        );
      }
      if (spawnError !== undefined && pid <= 0) {
        const missing = spawnError.code === "ENOENT" || spawnError.code === "EACCES";
        throw new SmithersError(missing ? "AGENT_CLI_NOT_FOUND" : "AGENT_CLI_EXIT", `${agent}: could not start "${run.binary}": ${spawnError.message}`, {
          agent,
          binary: run.binary,
          cause: spawnError,
        });
      }
      const failed = code !== 0 || !outcome.complete || outcome.error !== undefined;
      const details = { agent, exitCode: code, signal: exitSignal, stderrTail, partialText, malformedLines: malformed, ...spent };
      const recognised = failed ? run.parser.failure?.({ exitCode: code, signal: exitSignal, stderr: stderrTail }) : undefined;
      if (recognised) throw new SmithersError(recognised.code, `${agent}: ${recognised.message}`, { ...details, ...recognised.details });
      if (
        failed &&
        (outcome.authError === true ||
          AUTH_FAILURE_PATTERN.test(outcome.error ?? "") ||
          AUTH_FAILURE_PATTERN.test(stderrTail) ||
          (code !== null && run.authExitCodes?.includes(code)))
      ) {
        const why = outcome.error ?? lastLine(stderrTail) ?? `exit code ${code}`;
        throw new SmithersError("AGENT_AUTH_FAILED", `${agent}: the CLI is not logged in or its credentials were refused: ${why}`, details);
      }
      if (code !== 0) {
        const why = outcome.error ?? lastLine(stderrTail);
        const how = code === null ? `was killed by ${exitSignal}` : `exited with code ${code}`;
        throw new SmithersError("AGENT_CLI_EXIT", `${agent}: the CLI ${how}${why ? `: ${why}` : ""}`, details);
      }
      if (outcome.error !== undefined) {
        throw new SmithersError("AGENT_FAILED", `${agent}: the CLI reported an error: ${outcome.error}`, details);
      }
      if (!outcome.complete) {
        throw new SmithersError(
          "AGENT_STREAM_MALFORMED",
          `${agent}: the CLI exited without its final result in the stream (${records} records, ${malformed} lines skipped)`,
          {
            ...details,
            records,
          },
        );
      }
      return outcome;
    }
  });
}

function lastLine(text: string): string | undefined {
  const lines = text
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
  return lines.at(-1);
}
