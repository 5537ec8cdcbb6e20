import type { AgentEvent, AgentGenerateArgs, AgentUsage } from "../types.ts";
import { type CallContext, CliAgent, flag, num, obj, type PreparedCall, str, toggle } from "./cli-agent.ts";
import { type BaseCliAgentOptions, withSystemPrompt } from "./options.ts";
import { LastSegment, type StreamOutcome, type StreamParser } from "./run-cli.ts";

export type GeminiAgentOptions = BaseCliAgentOptions & {
  /** `--approval-mode`; when given, it replaces yolo's `--yolo` (the CLI refuses both together). */
  approvalMode?: "default" | "auto_edit" | "yolo" | "plan";
  /** `--sandbox`: run tools in the CLI's sandbox. */
  sandbox?: boolean;
  /** `--allowed-tools`: tools that run without confirmation. */
  allowedTools?: string[];
  /** `--allowed-mcp-server-names`. */
  allowedMcpServerNames?: string[];
  /** `--include-directories`: more workspace directories. */
  includeDirectories?: string[];
  /** `--extensions`: only these extensions. */
  extensions?: string[];
  /** `--resume <session>`: "latest", an index or a session id. */
  resume?: string;
  /** `--debug`. */
  debug?: boolean;
};

const OWN_KEYS = ["approvalMode", "sandbox", "allowedTools", "allowedMcpServerNames", "includeDirectories", "extensions", "resume", "debug"] as const;

/** Gemini CLI's exit code for an authentication failure (FatalAuthenticationError). */
const GEMINI_AUTH_EXIT = 41;

/**
 * Google's Gemini CLI as an agent: `gemini --output-format stream-json`, the prompt on stdin (the
 * CLI runs headless when stdin is not a terminal). `apiKey` sets GEMINI_API_KEY; `configDir` sets
 * GEMINI_CLI_HOME (the CLI keeps its settings and login in `<configDir>/.gemini`). `systemPrompt`
 * is put before the prompt (the CLI has no flag for it).
 *
 * @example
 * const gemini = new GeminiAgent({ model: "gemini-2.5-pro", includeDirectories: ["../shared"] });
 */
export class GeminiAgent extends CliAgent<GeminiAgentOptions> {
  constructor(options: GeminiAgentOptions = {}) {
    super("GeminiAgent", "gemini", options, OWN_KEYS);
  }

  protected override environment(): Record<string, string> {
    const env = super.environment();
    if (this.options.apiKey !== undefined) env.GEMINI_API_KEY = this.options.apiKey;
    if (this.options.configDir !== undefined) env.GEMINI_CLI_HOME = this.options.configDir;
    return env;
  }

  protected prepare(call: AgentGenerateArgs, context: CallContext): PreparedCall {
    const o = this.options;
    const args = ["--output-format", "stream-json"];
    flag(args, "--model", o.model);
    if (o.approvalMode !== undefined) flag(args, "--approval-mode", o.approvalMode);
    else toggle(args, "--yolo", o.yolo ?? true);
    toggle(args, "--sandbox", o.sandbox);
    // List flags accept comma-separated values.
    if (o.allowedTools?.length) flag(args, "--allowed-tools", o.allowedTools.join(","));
    if (o.allowedMcpServerNames?.length) flag(args, "--allowed-mcp-server-names", o.allowedMcpServerNames.join(","));
    if (o.includeDirectories?.length) flag(args, "--include-directories", o.includeDirectories.join(","));
    if (o.extensions?.length) flag(args, "--extensions", o.extensions.join(","));
    flag(args, "--resume", o.resume);
    toggle(args, "--debug", o.debug);
    args.push(...(o.extraArgs ?? []));
    return { args, stdin: withSystemPrompt(o, call.prompt), parser: new GeminiStreamParser(context.maxOutputBytes), authExitCodes: [GEMINI_AUTH_EXIT] };
  }
}

/** Parses `gemini --output-format stream-json` (init, message, tool_use, tool_result, error, result). */
export class GeminiStreamParser implements StreamParser {
  /** Assistant text since the last tool call: the final answer is the last non-empty one. */
  private readonly segments: LastSegment;
  private model: string | undefined;
  private complete = false;
  private error: string | undefined;
  private lastError: string | undefined;
  private usage: AgentUsage | undefined;
  private readonly toolNames = new Map<string, string>();

  constructor(maxBytes: number) {
    this.segments = new LastSegment(maxBytes);
  }

  record(r: Record<string, unknown>, emit: (event: AgentEvent) => void): void {
    if (r.type === "init") {
      this.model = str(r.model);
      const id = str(r.session_id);
      if (id !== undefined) emit({ type: "session", sessionId: id });
    } else if (r.type === "message" && r.role === "assistant" && typeof r.content === "string") {
      this.segments.current.append(r.content);
      emit({ type: "text", text: r.content });
    } else if (r.type === "tool_use") {
      this.segments.close();
      const name = str(r.tool_name) ?? "unknown";
      const id = str(r.tool_id);
      if (id !== undefined) this.toolNames.set(id, name);
      emit({ type: "tool-call", toolName: name, callId: id, input: r.parameters });
    } else if (r.type === "tool_result") {
      const id = str(r.tool_id);
      const output = r.output ?? obj(r.error)?.message;
      emit({ type: "tool-result", toolName: id === undefined ? undefined : this.toolNames.get(id), callId: id, output, isError: r.status === "error" });
    } else if (r.type === "error" && r.severity !== "warning") {
      this.lastError = str(r.message);
    } else if (r.type === "result") {
      this.complete = true;
      if (r.status === "error") this.error = str(obj(r.error)?.message) ?? this.lastError ?? "error";
      const stats = obj(r.stats);
      this.usage = { inputTokens: num(stats?.input_tokens), cachedInputTokens: num(stats?.cached), outputTokens: num(stats?.output_tokens), model: this.model };
      emit({ type: "usage", usage: this.usage });
    }
  }

  outcome(): StreamOutcome {
    const text = this.segments.text();
    const error = this.error ?? (this.complete ? undefined : this.lastError);
    return { text, complete: this.complete, error, usage: this.usage };
  }
}
