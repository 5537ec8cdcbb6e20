import type { Agent, AgentGenerateArgs, AgentReply, AgentUsage } from "../types.ts";
import { DEFAULT_MAX_OUTPUT_BYTES } from "./constants.ts";
import { type BaseCliAgentOptions, checkOptions, limitsOf, mergedEnv, resolveBinary } from "./options.ts";
import { runCli, type StreamOutcome, type StreamParser } from "./run-cli.ts";

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
export type CallContext = { cwd: string; maxOutputBytes: number };

/**
 * The shared half of the CLI agents: options, environment, binary lookup and the run; each agent
 * supplies its argv, its stream parser and its environment rules.
 */
export abstract class CliAgent<O extends BaseCliAgentOptions> implements Agent {
  readonly id: string;
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

  /** The child's environment: process.env with `env` on top, then the agent's own rules (auth, config dir). */
  protected environment(): Record<string, string> {
    return mergedEnv(this.options.env);
  }

  async generate(call: AgentGenerateArgs): Promise<AgentReply> {
    if (call.abortSignal?.aborted) throw call.abortSignal.reason;
    const cwd = this.options.cwd ?? call.cwd ?? process.cwd();
    const env = this.environment();
    // The CLI's own spans (if it traces) join the attempt's trace.
    if (call.traceparent !== undefined) env.TRACEPARENT = call.traceparent;
    const binary = this.options.binary ?? this.defaultBinary;
    const executable = resolveBinary(this.agentName, binary, env, cwd);
    const maxOutputBytes = this.options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    const prepared = await this.prepare(call, { cwd, maxOutputBytes });
    try {
      const outcome = await runCli({
        agent: this.agentName,
        executable,
        binary,
        args: [...prepared.args],
        stdin: prepared.stdin,
        cwd,
        env: prepared.env ? { ...env, ...prepared.env } : env,
        limits: limitsOf(this.options, call),
        maxOutputBytes,
        parser: prepared.parser,
        call,
        authExitCodes: prepared.authExitCodes,
      });
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
