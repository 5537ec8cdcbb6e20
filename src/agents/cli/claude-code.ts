import type { AgentGenerateArgs } from "../types.ts";
import { ClaudeStreamParser } from "./claude-stream.ts";
import { type CallContext, CliAgent, type InheritedEnv, flag, type PreparedCall, toggle } from "./cli-agent.ts";
import { type BaseCliAgentOptions, systemPromptOf } from "./options.ts";

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
 * Variables set for the CLI unless its environment already has them (an inherited or given value
 * wins): no telemetry, error reports, update checks, feature-flag fetches or connection warm-ups
 * (`HEAD /api/hello`) to Anthropic's hosts, which offline only fail or wait. Tried on Claude Code
 * 2.1.332: this one variable stops every request but the model turns, where DISABLE_TELEMETRY,
 * DISABLE_ERROR_REPORTING and DISABLE_AUTOUPDATER together still leave a lookup of
 * api.anthropic.com and the warm-up. Claude Code takes any non-empty value as "on" ("0" too): a
 * user opts back in with an empty value.
 */
export const CLAUDE_QUIET_ENV: Readonly<Record<string, string>> = { CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1" };

/** An IS_SANDBOX value that says "not a sandbox": kept, so Claude Code refuses yolo as root. */
const SANDBOX_DENIED = /^(?:0|false|no|off|)$/i;

/** Whether this process runs as root (Claude Code's root check looks at the same uid). */
const runsAsRoot = (): boolean => process.getuid?.() === 0;

/**
 * Anthropic's Claude Code CLI as an agent: `claude -p --output-format stream-json --verbose
 * --include-partial-messages`, the prompt on stdin, its text reported as it is written. `systemPrompt` goes to `--append-system-prompt` (Claude Code keeps its own
 * system prompt, which its tools rely on). Without `apiKey` an inherited ANTHROPIC_API_KEY is
 * removed from the CLI's environment, so it bills the logged-in subscription; `configDir` sets
 * CLAUDE_CONFIG_DIR.
 *
 * As root (CI, containers) Claude Code refuses to skip its permission prompts unless IS_SANDBOX
 * is exactly "1". When the call skips them (`yolo`, the default, or permissionMode
 * "bypassPermissions") and this process runs as root, the CLI gets IS_SANDBOX=1, unless the
 * environment (inherited or `env`) says IS_SANDBOX=0 / false / no / off / empty: that refusal is
 * the user's, and the call fails with AGENT_ROOT_REFUSED, never retried. (Another value, such as
 * "yes", is taken as yes and passed as "1".)
 *
 * @example
 * const claude = new ClaudeCodeAgent({ model: "sonnet", allowedTools: ["Read"], timeoutMs: 600_000 });
 * const { text, usage } = await claude.generate({ prompt: "Summarise README.md" });
 */
export class ClaudeCodeAgent extends CliAgent<ClaudeCodeAgentOptions> {
  constructor(options: ClaudeCodeAgentOptions = {}) {
    super("ClaudeCodeAgent", "claude", options, OWN_KEYS);
  }

  protected override environment(base?: InheritedEnv): Record<string, string> {
    const env = super.environment(base);
    const o = this.options;
    if (o.apiKey !== undefined) env.ANTHROPIC_API_KEY = o.apiKey;
    else if (o.env?.ANTHROPIC_API_KEY === undefined) delete env.ANTHROPIC_API_KEY;
    if (o.configDir !== undefined) env.CLAUDE_CONFIG_DIR = o.configDir;
    for (const [key, value] of Object.entries(CLAUDE_QUIET_ENV)) env[key] ??= value;
    if (this.skipsPermissions() && runsAsRoot() && !SANDBOX_DENIED.test(env.IS_SANDBOX ?? "yes")) env.IS_SANDBOX = "1";
    return env;
  }

  /** Whether the CLI is told to skip its permission prompts. */
  private skipsPermissions(): boolean {
    const o = this.options;
    if (o.extraArgs?.includes("--dangerously-skip-permissions")) return true;
    return o.permissionMode === undefined ? (o.yolo ?? true) : o.permissionMode === "bypassPermissions";
  }

  protected prepare(call: AgentGenerateArgs, context: CallContext): PreparedCall {
    const o = this.options;
    // Partial messages: the reply's text arrives as it is written (NodeOutput while the agent works).
    const args = ["-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages"];
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
