import { SmithersError } from "../../errors/index.ts";
import type { AgentEvent, AgentGenerateArgs, AgentUsage } from "../types.ts";
import { add, type CallContext, CliAgent, flag, num, obj, type PreparedCall, str, toggle } from "./cli-agent.ts";
import { type BaseCliAgentOptions, withSystemPrompt } from "./options.ts";
import { LastSegment, type StreamOutcome, type StreamParser } from "./run-cli.ts";

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

/**
 * The OpenCode CLI as an agent: `opencode run --format json`, the message on stdin; `model` is
 * "provider/model". yolo passes `--auto` (approve permission requests; without it `opencode run`
 * rejects them). `configDir` sets OPENCODE_CONFIG_DIR (a config directory OpenCode loads in
 * addition to its global one). `systemPrompt` is put before the prompt.
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

  protected override environment(): Record<string, string> {
    const env = super.environment();
    if (this.options.configDir !== undefined) env.OPENCODE_CONFIG_DIR = this.options.configDir;
    return env;
  }

  protected prepare(call: AgentGenerateArgs, context: CallContext): PreparedCall {
    const o = this.options;
    const args = ["run", "--format", "json"];
    flag(args, "--model", o.model);
    flag(args, "--agent", o.agentName);
    flag(args, "--session", o.sessionId);
    toggle(args, "--continue", o.continueSession);
    for (const file of o.attachFiles ?? []) args.push("--file", file);
    flag(args, "--variant", o.variant);
    toggle(args, "--auto", o.yolo ?? true);
    args.push(...(o.extraArgs ?? []));
    return { args, stdin: withSystemPrompt(o, call.prompt), parser: new OpenCodeStreamParser(context.maxOutputBytes) };
  }
}

/** Parses `opencode run --format json` (step_start, text, tool_use, step_finish, error). */
export class OpenCodeStreamParser implements StreamParser {
  /** Text of the current step: the final answer is the last step's that had any. */
  private readonly segments: LastSegment;
  private sessionId: string | undefined;
  private complete = false;
  private error: string | undefined;
  private authError = false;
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
      this.usage = {
        // OpenCode counts cache reads and writes apart from `input`; AgentUsage's input includes them.
        inputTokens: add(u?.inputTokens, add(add(num(tokens?.input), num(cache?.read)), num(cache?.write))),
        cachedInputTokens: add(u?.cachedInputTokens, num(cache?.read)),
        outputTokens: add(u?.outputTokens, add(num(tokens?.output), num(tokens?.reasoning))),
        costUsd: add(u?.costUsd, num(part.cost)),
      };
      emit({ type: "usage", usage: this.usage });
    } else if (r.type === "error") {
      const error = obj(r.error);
      this.error = str(obj(error?.data)?.message) ?? str(error?.message) ?? str(error?.name) ?? "error";
      if (error?.name === "ProviderAuthError") this.authError = true;
    }
  }

  outcome(): StreamOutcome {
    return { text: this.segments.text(), complete: this.complete, error: this.error, authError: this.authError, usage: this.usage };
  }
}
