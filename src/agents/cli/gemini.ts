import type { AgentGenerateArgs } from "../types.ts";
import { type CallContext, CliAgent, type InheritedEnv, flag, type PreparedCall, toggle } from "./cli-agent.ts";
import { GEMINI_QUIET_DEFAULTS } from "./constants.ts";
import { overlayGeminiHome } from "./gemini-settings.ts";
import { GeminiStreamParser } from "./gemini-stream.ts";
import { type BaseCliAgentOptions, withSystemPrompt } from "./options.ts";
import { nodeOs } from "./process-group.ts";

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

/**
 * Google's Gemini CLI as an agent: `gemini --output-format stream-json`, the prompt on stdin (the
 * CLI runs headless when stdin is not a terminal). `apiKey` sets GEMINI_API_KEY; `configDir` is
 * the CLI's home (GEMINI_CLI_HOME: it keeps its settings and login in `<configDir>/.gemini`).
 * `systemPrompt` is put before the prompt (the CLI has no flag for it).
 *
 * Unless the user set them, each call also gets: GEMINI_CLI_TRUST_WORKSPACE=true (headless, the
 * CLI refuses an untrusted folder with exit 55, and nobody is there to trust it),
 * GEMINI_CLI_NO_RELAUNCH=true (the CLI would otherwise start itself a second time for a larger
 * heap, about a second per call), and the settings GEMINI_QUIET_DEFAULTS plus API-key auth (when
 * GEMINI_API_KEY is set), under the user's own settings, through a temporary GEMINI_CLI_HOME that
 * links to the real one (gemini-settings.ts).
 *
 * @example
 * const gemini = new GeminiAgent({ model: "gemini-2.5-pro", includeDirectories: ["../shared"] });
 */
export class GeminiAgent extends CliAgent<GeminiAgentOptions> {
  constructor(options: GeminiAgentOptions = {}) {
    super("GeminiAgent", "gemini", options, OWN_KEYS);
  }

  protected override environment(base?: InheritedEnv): Record<string, string> {
    const env = super.environment(base);
    if (this.options.apiKey !== undefined) env.GEMINI_API_KEY = this.options.apiKey;
    if (this.options.configDir !== undefined) env.GEMINI_CLI_HOME = this.options.configDir;
    if (env.GEMINI_CLI_TRUST_WORKSPACE === undefined && env.GEMINI_RESTRICTED_MODE === undefined) env.GEMINI_CLI_TRUST_WORKSPACE = "true";
    env.GEMINI_CLI_NO_RELAUNCH ??= "true";
    return env;
  }

  protected async prepare(call: AgentGenerateArgs, context: CallContext): Promise<PreparedCall> {
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
    const { env } = context;
    // API-key auth when a key is there and no other auth was asked for through the environment.
    const keyAuth = env.GEMINI_API_KEY && env.GOOGLE_GENAI_USE_VERTEXAI !== "true" && env.GOOGLE_GENAI_USE_GCA !== "true";
    const auth = keyAuth ? { security: { auth: { selectedType: "gemini-api-key" } } } : {};
    const overlay = await overlayGeminiHome({ ...GEMINI_QUIET_DEFAULTS, ...auth }, env.GEMINI_CLI_HOME || env.HOME || nodeOs().homedir(), context.tmpDir);
    return {
      args,
      stdin: withSystemPrompt(o, call.prompt),
      parser: new GeminiStreamParser(context.maxOutputBytes),
      env: overlay?.env,
      cleanup: overlay?.cleanup,
    };
  }
}
