import { join } from "node:path";
import type { AgentGenerateArgs, AgentReply } from "../types.ts";
import { type CallContext, CliAgent, type InheritedEnv, flag, type PreparedCall, toggle } from "./cli-agent.ts";
import { type CodexConfigValue, codexUserSettings, toToml } from "./codex-config.ts";
import { CodexStreamParser } from "./codex-stream.ts";
import { CODEX_QUIET_DEFAULTS } from "./constants.ts";
import { type BaseCliAgentOptions, withSystemPrompt } from "./options.ts";
import { type StrictSchema, toStrictJsonSchema } from "./output-schema.ts";
import { CappedText, type StreamOutcome } from "./run-cli.ts";

export type { CodexConfigValue } from "./codex-config.ts";

export type CodexAgentOptions = BaseCliAgentOptions & {
  /** `--sandbox`; when given, it replaces yolo's `--dangerously-bypass-approvals-and-sandbox`. */
  sandbox?: "read-only" | "workspace-write" | "danger-full-access";
  /** `-c key=value` per entry (dotted keys for nested settings); values are written as TOML. */
  config?: Record<string, CodexConfigValue>;
  /** `--profile`: a profile of config.toml. */
  profile?: string;
  /** `--image`: images attached to the prompt. */
  image?: string[];
  /** `--add-dir`: more writable directories. */
  addDir?: string[];
  /** `--skip-git-repo-check`: allow running outside a Git repository. */
  skipGitRepoCheck?: boolean;
  /**
   * With a call's `outputSchema`, pass it as `--output-schema` so the model must answer in that
   * shape, and reply with the parsed JSON as `output` (default true).
   */
  nativeStructuredOutput?: boolean;
};

const OWN_KEYS = ["sandbox", "config", "profile", "image", "addDir", "skipGitRepoCheck", "nativeStructuredOutput"] as const;

/**
 * OpenAI's Codex CLI as an agent: `codex exec --json`, the prompt on stdin (`-`); the reply text is
 * the last agent message (`--output-last-message`). With a call's `outputSchema`, the schema goes
 * to `--output-schema` as strict JSON Schema and `output` is the parsed final message. `configDir`
 * sets CODEX_HOME; `apiKey` sets CODEX_API_KEY (what `codex exec` reads) and OPENAI_API_KEY.
 * `systemPrompt` is put before the prompt (codex exec has no flag for it). Analytics and the
 * plugin sync are turned off (CODEX_QUIET_DEFAULTS) unless the user's config.toml, profile,
 * `config` or `extraArgs` set them.
 *
 * @example
 * const codex = new CodexAgent({ model: "gpt-5-codex", sandbox: "workspace-write", config: { model_reasoning_effort: "high" } });
 */
export class CodexAgent extends CliAgent<CodexAgentOptions> {
  constructor(options: CodexAgentOptions = {}) {
    super("CodexAgent", "codex", options, OWN_KEYS);
    for (const [key, value] of Object.entries(options.config ?? {})) toToml(value, key);
  }

  protected override environment(base?: InheritedEnv): Record<string, string> {
    const env = super.environment(base);
    if (this.options.configDir !== undefined) env.CODEX_HOME = this.options.configDir;
    if (this.options.apiKey !== undefined) env.CODEX_API_KEY = env.OPENAI_API_KEY = this.options.apiKey;
    return env;
  }

  protected async prepare(call: AgentGenerateArgs, context: CallContext): Promise<PreparedCall> {
    const o = this.options;
    const strict: StrictSchema | undefined = call.outputSchema && o.nativeStructuredOutput !== false ? toStrictJsonSchema(call.outputSchema) : undefined;
    // Loaded here, not at start-up: a process that never calls Codex does not pay for it.
    const { mkdtemp, readFile, rm, writeFile } = await import("node:fs/promises");
    const dir = await mkdtemp(join(context.tmpDir, "smithers-codex-"));
    const lastMessageFile = join(dir, "last-message.txt");
    const args = ["exec", "--json"];
    // --image takes several values: keep it before other flags so it cannot swallow the final "-".
    for (const image of o.image ?? []) args.push("--image", image);
    args.push("--cd", context.cwd);
    flag(args, "--model", o.model);
    if (o.sandbox !== undefined) flag(args, "--sandbox", o.sandbox);
    else toggle(args, "--dangerously-bypass-approvals-and-sandbox", o.yolo ?? true);
    flag(args, "--profile", o.profile);
    for (const d of o.addDir ?? []) args.push("--add-dir", d);
    toggle(args, "--skip-git-repo-check", o.skipGitRepoCheck);
    const settings = await codexUserSettings({
      codexHome: context.env.CODEX_HOME,
      config: o.config,
      extraArgs: o.extraArgs,
      profile: o.profile,
      model: o.model,
    });
    for (const [key, value] of Object.entries(CODEX_QUIET_DEFAULTS)) if (!settings.sets(key)) args.push("-c", `${key}=${value}`);
    for (const [key, value] of Object.entries(o.config ?? {})) args.push("-c", `${key}=${toToml(value, key)}`);
    args.push("--output-last-message", lastMessageFile);
    if (strict) {
      const schemaFile = join(dir, "output-schema.json");
      await writeFile(schemaFile, JSON.stringify(strict.schema, null, 2));
      args.push("--output-schema", schemaFile);
    }
    args.push(...(o.extraArgs ?? []), "-");

    const reply = async (outcome: StreamOutcome): Promise<AgentReply> => {
      const fromFile = await readFile(lastMessageFile, "utf8").catch(() => "");
      const capped = new CappedText(context.maxOutputBytes);
      capped.append(fromFile.trim() === "" ? outcome.text : fromFile);
      const text = capped.value;
      // The model the provider said answered, else the one Codex asked for.
      const model = outcome.usage?.model ?? settings.model;
      const usage = outcome.usage && (model === undefined ? outcome.usage : { ...outcome.usage, model });
      const result: AgentReply = { text, usage };
      if (strict) {
        try {
          result.output = strict.stripOptionalNulls(JSON.parse(text));
        } catch {
          // Not JSON after all: the caller validates `text` and reports it.
        }
      }
      return result;
    };
    return {
      args,
      stdin: withSystemPrompt(o, call.prompt),
      parser: new CodexStreamParser(context.maxOutputBytes),
      reply,
      cleanup: () => rm(dir, { recursive: true, force: true }),
    };
  }
}
