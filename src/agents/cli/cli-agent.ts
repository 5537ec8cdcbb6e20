import { SmithersError } from "../../errors/index.ts";
import type { Agent, AgentGenerateArgs, AgentReply, AgentUsage, ProcessSandbox } from "../types.ts";
import { DEFAULT_MAX_OUTPUT_BYTES } from "./constants.ts";
import { type BaseCliAgentOptions, checkOptions, limitsOf, mergedEnv, resolveBinary } from "./options.ts";
import { runCli, type StreamOutcome, type StreamParser } from "./run-cli.ts";
import { nodeOs } from "./process-group.ts";

/** What one agent builds for one call. */
export type PreparedCall = {
  args: string[];
  stdin: string;
  parser: StreamParser;
  /** Turns the outcome into the reply (default: text and usage). */
  reply?: (outcome: StreamOutcome) => AgentReply | Promise<AgentReply>;
  /** Variables added to the child's environment for this call (the path of a per-call settings file). */
  env?: Record<string, string>;
  /** Runs after the call, whatever its end (temporary files). */
  cleanup?: () => void | Promise<void>;
  authExitCodes?: readonly number[];
};

/** Per-call context given to `prepare`. */
export type CallContext = {
  cwd: string;
  maxOutputBytes: number;
  /** The child's environment (its HOME, config dirs), as `environment()` built it for this call. */
  env: Record<string, string>;
  /** Where per-call files go so the child can read them: the host's temporary directory, or the sandbox's. */
  tmpDir: string;
};

/** The environment a subclass's rules build on: process.env, or a sandbox's few variables. */
export type InheritedEnv = Readonly<Record<string, string | undefined>>;

/**
 * The shared half of the CLI agents: options, environment, binary lookup and the run; each agent
 * supplies its argv, its stream parser and its environment rules.
 */
export abstract class CliAgent<O extends BaseCliAgentOptions> implements Agent {
  readonly id: string;
  /** Its CLI is a subprocess: a task's `<Sandbox>` runs it inside bubblewrap (AgentGenerateArgs.sandbox). */
  readonly sandboxable = true;
  protected readonly options: O;

  protected constructor(
    /** The class name, for messages. */
    protected readonly agentName: string,
    /** The CLI's executable name. */
    protected readonly defaultBinary: string,
    options: O,
    ownKeys: readonly string[],
  ) {
    checkOptions(agentName, options, ownKeys);
    this.options = { ...options };
    this.id = options.id ?? defaultBinary;
  }

  /** The argv, stdin and parser of one call. */
  protected abstract prepare(call: AgentGenerateArgs, context: CallContext): PreparedCall | Promise<PreparedCall>;

  /** The child's environment: `base` (process.env) with `env` on top, then the agent's own rules (auth, config dir). */
  protected environment(base?: InheritedEnv): Record<string, string> {
    return mergedEnv(this.options.env, base);
  }

  async generate(call: AgentGenerateArgs): Promise<AgentReply> {
    if (call.abortSignal?.aborted) throw call.abortSignal.reason;
    const { sandbox } = call;
    if (sandbox && this.options.cwd !== undefined) {
      throw new SmithersError("SANDBOX_POLICY_UNSUPPORTED", `${this.agentName}: a sandboxed CLI runs in the sandbox's own directory; remove the cwd option`, {
        agent: this.agentName,
        option: "cwd",
      });
    }
    const cwd = sandbox?.cwd ?? this.options.cwd ?? call.cwd ?? process.cwd();
    // Sandboxed, the CLI gets no inherited variable but PATH: only what the agent's options set (key, base URL, config).
    const env = this.environment(sandbox ? { PATH: process.env.PATH, HOME: sandbox.home, TMPDIR: "/tmp" } : undefined);
    // The CLI's own spans (if it traces) join the attempt's trace.
    if (call.traceparent !== undefined) env.TRACEPARENT = call.traceparent;
    const binary = this.options.binary ?? this.defaultBinary;
    const executable = resolveBinary(this.agentName, binary, env, cwd);
    const maxOutputBytes = this.options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    const prepared = await this.prepare(call, { cwd, maxOutputBytes, env, tmpDir: sandbox?.scratchDir ?? nodeOs().tmpdir() });
    const childEnv = prepared.env ? { ...env, ...prepared.env } : env;
    const run = {
      agent: this.agentName,
      executable,
      binary,
      args: [...prepared.args],
      stdin: prepared.stdin,
      cwd,
      env: childEnv,
      limits: limitsOf(this.options, call),
      maxOutputBytes,
      parser: prepared.parser,
      call,
      authExitCodes: prepared.authExitCodes,
    };
    try {
      const outcome = await (sandbox ? runInSandbox(sandbox, run) : runCli(run));
      if (prepared.reply) return await prepared.reply(outcome);
      return { text: outcome.text, usage: this.usageOf(outcome) };
    } finally {
      await prepared.cleanup?.();
    }
  }

  /** The outcome's usage, with the configured model when the stream did not name one. */
  protected usageOf(outcome: StreamOutcome): AgentUsage | undefined {
    if (!outcome.usage) return undefined;
    const model = outcome.usage.model ?? this.options.model;
    return model === undefined ? outcome.usage : { ...outcome.usage, model };
  }
}

/** The call with its command run inside `sandbox` (bwrap sets the environment; bwrap itself needs only PATH). */
async function runInSandbox(sandbox: ProcessSandbox, run: Parameters<typeof runCli>[0]): Promise<StreamOutcome> {
  const [executable, ...args] = sandbox.command([run.executable, ...run.args], run.env);
  const onEvent = run.call.onEvent;
  const call = {
    ...run.call,
    onEvent: (event: Parameters<NonNullable<typeof onEvent>>[0]) => {
      if (event.type === "process") sandbox.started(event.pid);
      onEvent?.(event);
    },
  };
  try {
    const outcome = await runCli({ ...run, executable: executable!, args, env: { PATH: process.env.PATH ?? "/usr/bin:/bin" }, call });
    sandbox.ended(0);
    return outcome;
  } catch (error) {
    const exitCode = (error as { details?: { exitCode?: unknown } }).details?.exitCode;
    sandbox.ended(typeof exitCode === "number" ? exitCode : null);
    throw sandbox.explain(error);
  }
}

/** Appends `flag value` when value is defined. */
export function flag(args: string[], name: string, value: string | number | undefined): void {
  if (value !== undefined) args.push(name, String(value));
}

/** Appends the flag alone when `on`. */
export function toggle(args: string[], name: string, on: boolean | undefined): void {
  if (on === true) args.push(name);
}

/** A number field of a record, when it is one. */
export function num(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}

/** A string field of a record, when it is one. */
export function str(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** A record field, when it is a plain object. */
export function obj(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/** Sum of two optional counts (undefined + undefined stays unknown). */
export function add(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined && b === undefined ? undefined : (a ?? 0) + (b ?? 0);
}
