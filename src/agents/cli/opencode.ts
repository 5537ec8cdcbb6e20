import { SmithersError } from "../../errors/index.ts";
import type { AgentEvent, AgentGenerateArgs, AgentReply, AgentUsage } from "../types.ts";
import { add, type CallContext, CliAgent, flag, type InheritedEnv, num, obj, type PreparedCall, str, toggle } from "./cli-agent.ts";
import { retryAfter } from "../retry-after.ts";
import { OPENCODE_QUIET_ENV } from "./constants.ts";

export { retryAfter };
import { type BaseCliAgentOptions, withSystemPrompt } from "./options.ts";
import { LastSegment, type StreamFailure, type StreamOutcome, type StreamParser } from "./run-cli.ts";

/** OpenCode reaches many providers, each with its own key variable: give keys through `env`, not `apiKey`. */
export type OpenCodeAgentOptions = Omit<BaseCliAgentOptions, "apiKey"> & {
  /** `--agent`: one of OpenCode's primary agents (e.g. "build", "plan"). */
  agentName?: string;
  /** `--session <id>`: continue that session. */
  sessionId?: string;
  /** `--continue`: continue the last session. */
  continueSession?: boolean;
  /** `--file`: files attached to the message. */
  attachFiles?: string[];
  /** `--variant`: the model's variant (provider-specific reasoning effort, e.g. "high"). */
  variant?: string;
};

const OWN_KEYS = ["agentName", "sessionId", "continueSession", "attachFiles", "variant"] as const;

/** OpenCode's error names for an unknown model and a refused login (in its error record or its logs). */
const MODEL_NOT_FOUND_NAME = "ProviderModelNotFoundError";
const AUTH_ERROR_NAME = "ProviderAuthError";
const RATE_LIMIT_PATTERN = /\b429\b|too many requests|rate[ _-]?limit|quota|resource[ _]exhausted/i;

/**
 * The OpenCode CLI as an agent: `opencode run --format json --title --print-logs --log-level ERROR`,
 * the message on stdin; `model` is "provider/model" (also the name recorded and priced).
 * yolo passes `--auto` (approve permission requests; without it `opencode run` rejects them).
 * `--title` (a new session only) names the session after the prompt instead of asking the model for
 * a title, a request whose tokens OpenCode would not report. `--print-logs --log-level ERROR` puts
 * OpenCode's errors on stderr (an unknown model is only named there). OPENCODE_QUIET_ENV is set
 * where the environment does not set it. `configDir` sets OPENCODE_CONFIG_DIR (a config directory
 * OpenCode loads in addition to its global one). `systemPrompt` is put before the prompt.
 *
 * @example
 * const opencode = new OpenCodeAgent({ model: "anthropic/claude-sonnet-4-5", agentName: "build" });
 */
export class OpenCodeAgent extends CliAgent<OpenCodeAgentOptions> {
  constructor(options: OpenCodeAgentOptions = {}) {
    if ((options as BaseCliAgentOptions).apiKey !== undefined) {
      throw new SmithersError(
        "INVALID_OPTION",
        'OpenCodeAgent does not accept "apiKey": OpenCode reads each provider\'s own variable; pass it in env (e.g. env: { ANTHROPIC_API_KEY })',
        { agent: "OpenCodeAgent", options: ["apiKey"] },
      );
    }
    super("OpenCodeAgent", "opencode", options, OWN_KEYS);
  }

  protected override environment(base?: InheritedEnv): Record<string, string> {
    const env = super.environment(base);
    if (this.options.configDir !== undefined) env.OPENCODE_CONFIG_DIR = this.options.configDir;
    for (const [key, value] of Object.entries(OPENCODE_QUIET_ENV)) env[key] ??= value;
    return env;
  }

  /** Also AGENT_MODEL_NOT_FOUND for a model OpenCode's config lacks (its stream says only "UnknownError"; its log names it). */
  override async generate(call: AgentGenerateArgs): Promise<AgentReply> {
    try {
      return await super.generate(call);
    } catch (error) {
      const stderr = SmithersError.is(error, "AGENT_CLI_EXIT") ? str(obj(error.details)?.stderrTail) : undefined;
      const line = stderr?.split("\n").find((l) => l.includes(`${MODEL_NOT_FOUND_NAME}:`));
      if (!SmithersError.is(error) || line === undefined) throw error;
      const why = /ProviderModelNotFoundError: ([^"\\]*)/.exec(line)?.[1]?.trim() ?? "model not found";
      throw new SmithersError("AGENT_MODEL_NOT_FOUND", `${this.agentName}: ${why}`, { ...error.details, cause: error });
    }
  }

  protected prepare(call: AgentGenerateArgs, context: CallContext): PreparedCall {
    const o = this.options;
    const extra = o.extraArgs ?? [];
    const given = (name: string) => extra.some((arg) => arg === name || arg.startsWith(`${name}=`));
    const args = ["run", "--format", "json"];
    flag(args, "--model", o.model);
    flag(args, "--agent", o.agentName);
    flag(args, "--session", o.sessionId);
    toggle(args, "--continue", o.continueSession);
    for (const file of o.attachFiles ?? []) args.push("--file", file);
    flag(args, "--variant", o.variant);
    toggle(args, "--auto", o.yolo ?? true);
    toggle(args, "--title", o.sessionId === undefined && o.continueSession !== true && !given("--title"));
    toggle(args, "--print-logs", !given("--print-logs"));
    if (!given("--log-level")) args.push("--log-level", "ERROR");
    args.push(...extra);
    return { args, stdin: withSystemPrompt(o, call.prompt), parser: new OpenCodeStreamParser(context.maxOutputBytes) };
  }
}

/**
 * Parses `opencode run --format json` (step_start, text, tool_use, step_finish, error). A step's
 * `cost` of 0 with tokens spent means OpenCode knows no price for the model (a custom one): it is
 * left unknown, so `pricing` applies, rather than recorded as free. An error record's
 * `data.statusCode` classifies it: 401/403 AGENT_AUTH_FAILED, 404 AGENT_MODEL_NOT_FOUND, 429
 * AGENT_RATE_LIMITED (after OpenCode's own 5 retries, with the provider's `retry-after-ms` /
 * `retry-after` as `retryAfterMs`).
 */
export class OpenCodeStreamParser implements StreamParser {
  /** Text of the current step: the final answer is the last step's that had any. */
  private readonly segments: LastSegment;
  private sessionId: string | undefined;
  private complete = false;
  private error: string | undefined;
  private authError = false;
  private failed: StreamFailure | undefined;
  private usage: AgentUsage | undefined;

  constructor(maxBytes: number) {
    this.segments = new LastSegment(maxBytes);
  }

  record(r: Record<string, unknown>, emit: (event: AgentEvent) => void): void {
    const session = str(r.sessionID);
    if (session !== undefined && this.sessionId === undefined) {
      this.sessionId = session;
      emit({ type: "session", sessionId: session });
    }
    const part = obj(r.part);
    if (r.type === "step_start") {
      this.segments.close();
    } else if (r.type === "text" && typeof part?.text === "string") {
      if (this.segments.current.value !== "") this.segments.current.append("\n");
      this.segments.current.append(part.text);
      emit({ type: "text", text: part.text });
    } else if (r.type === "tool_use" && part) {
      this.segments.close();
      const state = obj(part.state);
      const toolName = str(part.tool) ?? "unknown";
      const callId = str(part.callID);
      emit({ type: "tool-call", toolName, callId, input: state?.input });
      const isError = state?.status === "error";
      emit({ type: "tool-result", toolName, callId, output: isError ? state?.error : state?.output, isError });
    } else if (r.type === "step_finish" && part) {
      this.complete = true;
      const tokens = obj(part.tokens);
      const cache = obj(tokens?.cache);
      const u = this.usage;
      // OpenCode counts cache reads and writes apart from `input`; AgentUsage's input includes them.
      const input = add(add(num(tokens?.input), num(cache?.read)), num(cache?.write));
      const output = add(num(tokens?.output), num(tokens?.reasoning));
      const cost = num(part.cost);
      const unpriced = cost === 0 && (input ?? 0) + (output ?? 0) > 0;
      this.usage = {
        inputTokens: add(u?.inputTokens, input),
        cachedInputTokens: add(u?.cachedInputTokens, num(cache?.read)),
        outputTokens: add(u?.outputTokens, output),
        costUsd: add(u?.costUsd, unpriced ? undefined : cost),
      };
      emit({ type: "usage", usage: this.usage });
    } else if (r.type === "error") {
      const error = obj(r.error);
      const data = obj(error?.data);
      this.error = str(data?.message) ?? str(error?.message) ?? str(error?.name) ?? "error";
      if (error?.name === AUTH_ERROR_NAME) this.authError = true;
      this.failed = classify(str(error?.name), num(data?.statusCode), this.error, obj(data?.responseHeaders));
    }
  }

  outcome(): StreamOutcome {
    const failure = this.failed ? { failure: this.failed } : {};
    return { text: this.segments.text(), complete: this.complete, error: this.error, authError: this.authError, usage: this.usage, ...failure };
  }
}

/** The failure an OpenCode error record describes, when it is one with its own code. */
function classify(
  name: string | undefined,
  status: number | undefined,
  message: string,
  headers: Record<string, unknown> | undefined,
): StreamFailure | undefined {
  const http = status === undefined ? "" : ` (HTTP ${status})`;
  if (status === 401 || status === 403 || name === AUTH_ERROR_NAME) {
    return { code: "AGENT_AUTH_FAILED", message: `the provider refused the credentials${http}: ${message}`, details: { statusCode: status } };
  }
  if (status === 404 || name === MODEL_NOT_FOUND_NAME) {
    return { code: "AGENT_MODEL_NOT_FOUND", message: `the provider does not know the model${http}: ${message}`, details: { statusCode: status } };
  }
  if (status === 429 || (status === undefined && RATE_LIMIT_PATTERN.test(message))) {
    const retryAfterMs = retryAfter(headers);
    return {
      code: "AGENT_RATE_LIMITED",
      message: `the provider's rate limit or quota stopped the call${http}, after OpenCode's own retries: ${message}`,
      details: { statusCode: status, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) },
    };
  }
  return undefined;
}
