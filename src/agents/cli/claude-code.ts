import type { AgentEvent, AgentGenerateArgs, AgentUsage } from "../types.ts";
import { add, type CallContext, CliAgent, flag, num, obj, type PreparedCall, str, toggle } from "./cli-agent.ts";
import { type BaseCliAgentOptions, systemPromptOf } from "./options.ts";
import { CappedText, type StreamOutcome, type StreamParser } from "./run-cli.ts";

export type ClaudeCodeAgentOptions = BaseCliAgentOptions & {
  /** `--permission-mode`; when given, it replaces yolo's `--dangerously-skip-permissions`. */
  permissionMode?: "default" | "acceptEdits" | "plan" | "auto" | "dontAsk" | "bypassPermissions";
  /** `--allowedTools`: tools that run without asking (e.g. "Read", "Bash(git log:*)"). */
  allowedTools?: string[];
  /** `--disallowedTools`: tools the agent may not use. */
  disallowedTools?: string[];
  /** `--tools`: the only built-in tools available ([] for none, "default" for all). */
  tools?: string[] | "default";
  /** `--add-dir`: more directories the agent may read and edit. */
  addDir?: string[];
  /** `--mcp-config`: MCP config files or inline JSON strings. */
  mcpConfig?: string[];
  /** `--strict-mcp-config`: use only the servers of mcpConfig. */
  strictMcpConfig?: boolean;
  /** `--max-turns`. */
  maxTurns?: number;
  /** `--max-budget-usd`: the CLI stops once the call has cost this much. */
  maxBudgetUsd?: number;
  /** `--fallback-model`: used when the model is overloaded. */
  fallbackModel?: string;
  /** `--resume <session id>`. */
  resume?: string;
  /** `--session-id <uuid>`: the id the new session gets. */
  sessionId?: string;
  /** `--continue`: continue the most recent session of the directory. */
  continue?: boolean;
  /** `--fork-session`: with resume / continue, continue in a new session. */
  forkSession?: boolean;
};

const OWN_KEYS = [
  "permissionMode",
  "allowedTools",
  "disallowedTools",
  "tools",
  "addDir",
  "mcpConfig",
  "strictMcpConfig",
  "maxTurns",
  "maxBudgetUsd",
  "fallbackModel",
  "resume",
  "sessionId",
  "continue",
  "forkSession",
] as const;

/**
 * Anthropic's Claude Code CLI as an agent: `claude -p --output-format stream-json --verbose`,
 * the prompt on stdin. `systemPrompt` goes to `--append-system-prompt` (Claude Code keeps its own
 * system prompt, which its tools rely on). Without `apiKey` an inherited ANTHROPIC_API_KEY is
 * removed from the CLI's environment, so it bills the logged-in subscription; `configDir` sets
 * CLAUDE_CONFIG_DIR.
 *
 * @example
 * const claude = new ClaudeCodeAgent({ model: "sonnet", allowedTools: ["Read"], timeoutMs: 600_000 });
 * const { text, usage } = await claude.generate({ prompt: "Summarise README.md" });
 */
export class ClaudeCodeAgent extends CliAgent<ClaudeCodeAgentOptions> {
  constructor(options: ClaudeCodeAgentOptions = {}) {
    super("ClaudeCodeAgent", "claude", options, OWN_KEYS);
  }

  protected override environment(): Record<string, string> {
    const env = super.environment();
    const o = this.options;
    if (o.apiKey !== undefined) env.ANTHROPIC_API_KEY = o.apiKey;
    else if (o.env?.ANTHROPIC_API_KEY === undefined) delete env.ANTHROPIC_API_KEY;
    if (o.configDir !== undefined) env.CLAUDE_CONFIG_DIR = o.configDir;
    return env;
  }

  protected prepare(call: AgentGenerateArgs, context: CallContext): PreparedCall {
    const o = this.options;
    const args = ["-p", "--output-format", "stream-json", "--verbose"];
    flag(args, "--model", o.model);
    flag(args, "--append-system-prompt", systemPromptOf(o) || undefined);
    if (o.permissionMode !== undefined) flag(args, "--permission-mode", o.permissionMode);
    else toggle(args, "--dangerously-skip-permissions", o.yolo ?? true);
    // Variadic flags: the prompt goes on stdin, so no positional argument follows that they could swallow.
    if (o.allowedTools?.length) args.push("--allowedTools", ...o.allowedTools);
    if (o.disallowedTools?.length) args.push("--disallowedTools", ...o.disallowedTools);
    if (o.tools !== undefined) args.push("--tools", o.tools === "default" ? "default" : o.tools.join(","));
    if (o.addDir?.length) args.push("--add-dir", ...o.addDir);
    if (o.mcpConfig?.length) args.push("--mcp-config", ...o.mcpConfig);
    toggle(args, "--strict-mcp-config", o.strictMcpConfig);
    flag(args, "--max-turns", o.maxTurns);
    flag(args, "--max-budget-usd", o.maxBudgetUsd);
    flag(args, "--fallback-model", o.fallbackModel);
    flag(args, "--resume", o.resume);
    flag(args, "--session-id", o.sessionId);
    toggle(args, "--continue", o.continue);
    toggle(args, "--fork-session", o.forkSession);
    args.push(...(o.extraArgs ?? []));
    return { args, stdin: call.prompt, parser: new ClaudeStreamParser(context.maxOutputBytes) };
  }
}

/** Content of a tool_result block: its text when it is text blocks, else as it came. */
function toolOutput(content: unknown): unknown {
  if (!Array.isArray(content)) return content;
  const texts = content.map((block) => (obj(block)?.type === "text" ? str(obj(block)?.text) : undefined));
  return texts.every((t) => t !== undefined) ? texts.join("") : content;
}

/** Parses `claude -p --output-format stream-json --verbose` (system/init, assistant, user, result). */
export class ClaudeStreamParser implements StreamParser {
  private readonly lastText: CappedText;
  private finalText: string | undefined;
  private sessionId: string | undefined;
  private model: string | undefined;
  private complete = false;
  private error: string | undefined;
  private authError = false;
  private usage: AgentUsage | undefined;
  private readonly toolNames = new Map<string, string>();

  constructor(private readonly maxBytes: number) {
    this.lastText = new CappedText(maxBytes);
  }

  private session(id: string | undefined, emit: (event: AgentEvent) => void): void {
    if (id === undefined || this.sessionId !== undefined) return;
    this.sessionId = id;
    emit({ type: "session", sessionId: id });
  }

  record(r: Record<string, unknown>, emit: (event: AgentEvent) => void): void {
    this.session(str(r.session_id), emit);
    if (r.type === "system" && r.subtype === "init") {
      this.model = str(r.model) ?? this.model;
    } else if (r.type === "assistant") {
      // A failed request comes back as an assistant message with an `error` kind.
      if (r.error === "authentication_failed") this.authError = true;
      const content = obj(r.message)?.content;
      if (!Array.isArray(content)) return;
      let text = "";
      for (const raw of content) {
        const block = obj(raw);
        if (block?.type === "text" && typeof block.text === "string") {
          text += block.text;
          emit({ type: "text", text: block.text });
        } else if (block?.type === "tool_use") {
          const name = str(block.name) ?? "unknown";
          const id = str(block.id);
          if (id !== undefined) this.toolNames.set(id, name);
          emit({ type: "tool-call", toolName: name, callId: id, input: block.input });
        }
      }
      if (text !== "") {
        this.lastText.reset();
        this.lastText.append(text);
      }
    } else if (r.type === "user") {
      const content = obj(r.message)?.content;
      if (!Array.isArray(content)) return;
      for (const raw of content) {
        const block = obj(raw);
        if (block?.type !== "tool_result") continue;
        const id = str(block.tool_use_id);
        emit({
          type: "tool-result",
          toolName: id === undefined ? undefined : this.toolNames.get(id),
          callId: id,
          output: toolOutput(block.content),
          isError: block.is_error === true,
        });
      }
    } else if (r.type === "result") {
      this.complete = true;
      this.finalText = str(r.result);
      if (r.is_error === true || (typeof r.subtype === "string" && r.subtype !== "success")) {
        const errors = Array.isArray(r.errors) ? r.errors.filter((e) => typeof e === "string").join("; ") : "";
        this.error = this.finalText || errors || String(r.subtype ?? "error");
      }
      const u = obj(r.usage);
      const input = num(u?.input_tokens);
      const cacheRead = num(u?.cache_read_input_tokens);
      const cacheWrite = num(u?.cache_creation_input_tokens);
      this.usage = {
        // Anthropic counts cache reads and writes apart from input_tokens; AgentUsage's input includes them.
        inputTokens: add(add(input, cacheRead), cacheWrite),
        cachedInputTokens: cacheRead,
        outputTokens: num(u?.output_tokens),
        costUsd: num(r.total_cost_usd),
        model: this.model,
      };
      emit({ type: "usage", usage: this.usage });
    }
  }

  outcome(): StreamOutcome {
    const text = new CappedText(this.maxBytes);
    text.append(this.finalText ?? this.lastText.value);
    return { text: text.value, complete: this.complete, error: this.error, authError: this.authError, usage: this.usage };
  }
}
