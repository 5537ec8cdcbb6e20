import { tmpdir } from "node:os";
import { join } from "node:path";
import { SmithersError } from "../../errors/index.ts";
import type { AgentEvent, AgentGenerateArgs, AgentReply, AgentUsage } from "../types.ts";
import { add, type CallContext, CliAgent, flag, num, obj, type PreparedCall, str, toggle } from "./cli-agent.ts";
import { type BaseCliAgentOptions, withSystemPrompt } from "./options.ts";
import { type StrictSchema, toStrictJsonSchema } from "./output-schema.ts";
import { CappedText, type StreamOutcome, type StreamParser } from "./run-cli.ts";

export type CodexConfigValue = string | number | boolean | CodexConfigValue[] | { [key: string]: CodexConfigValue };

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

function tomlKey(key: string): string {
  return /^[A-Za-z0-9_-]+$/.test(key) ? key : JSON.stringify(key);
}

/** A config value as the TOML `codex -c` parses (strings quoted, inline arrays and tables). */
export function toToml(value: CodexConfigValue, key: string): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "boolean") return String(value);
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  if (Array.isArray(value)) return `[${value.map((v) => toToml(v, key)).join(", ")}]`;
  if (typeof value === "object" && value !== null) {
    return `{ ${Object.entries(value)
      .map(([k, v]) => `${tomlKey(k)} = ${toToml(v, key)}`)
      .join(", ")} }`;
  }
  throw new SmithersError("INVALID_OPTION", `CodexAgent: config "${key}" has a value TOML cannot hold (${String(value)})`, { option: "config", key });
}

/**
 * OpenAI's Codex CLI as an agent: `codex exec --json`, the prompt on stdin (`-`); the reply text is
 * the last agent message (`--output-last-message`). With a call's `outputSchema`, the schema goes
 * to `--output-schema` as strict JSON Schema and `output` is the parsed final message. `configDir`
 * sets CODEX_HOME; `apiKey` sets CODEX_API_KEY (what `codex exec` reads) and OPENAI_API_KEY.
 * `systemPrompt` is put before the prompt (codex exec has no flag for it).
 *
 * @example
 * const codex = new CodexAgent({ model: "gpt-5-codex", sandbox: "workspace-write", config: { model_reasoning_effort: "high" } });
 */
export class CodexAgent extends CliAgent<CodexAgentOptions> {
  constructor(options: CodexAgentOptions = {}) {
    super("CodexAgent", "codex", options, OWN_KEYS);
    for (const [key, value] of Object.entries(options.config ?? {})) toToml(value, key);
  }

  protected override environment(): Record<string, string> {
    const env = super.environment();
    if (this.options.configDir !== undefined) env.CODEX_HOME = this.options.configDir;
    if (this.options.apiKey !== undefined) env.CODEX_API_KEY = env.OPENAI_API_KEY = this.options.apiKey;
    return env;
  }

  protected async prepare(call: AgentGenerateArgs, context: CallContext): Promise<PreparedCall> {
    const o = this.options;
    const strict: StrictSchema | undefined = call.outputSchema && o.nativeStructuredOutput !== false ? toStrictJsonSchema(call.outputSchema) : undefined;
    // Loaded here, not at start-up: a process that never calls Codex does not pay for it.
    const { mkdtemp, readFile, rm, writeFile } = await import("node:fs/promises");
    const dir = await mkdtemp(join(tmpdir(), "smithers-codex-"));
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
      const result: AgentReply = { text, usage: this.usageOf(outcome) };
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

const TOOL_ITEMS = new Set(["command_execution", "mcp_tool_call", "web_search", "file_change"]);

/** Parses `codex exec --json` (thread.*, turn.*, item.*, error). */
export class CodexStreamParser implements StreamParser {
  private readonly text: CappedText;
  private complete = false;
  private failed: string | undefined;
  private lastError: string | undefined;
  private usage: AgentUsage | undefined;
  private readonly started = new Set<string>();

  constructor(maxBytes: number) {
    this.text = new CappedText(maxBytes);
  }

  private toolCall(item: Record<string, unknown>, emit: (event: AgentEvent) => void): void {
    const id = str(item.id);
    if (id !== undefined) {
      if (this.started.has(id)) return;
      this.started.add(id);
    }
    const type = String(item.type);
    const toolName = type === "mcp_tool_call" ? `${str(item.server) ?? "mcp"}.${str(item.tool) ?? "tool"}` : type;
    const input =
      type === "command_execution"
        ? { command: item.command }
        : type === "mcp_tool_call"
          ? item.arguments
          : type === "web_search"
            ? { query: item.query }
            : { changes: item.changes };
    emit({ type: "tool-call", toolName, callId: id, input });
  }

  record(r: Record<string, unknown>, emit: (event: AgentEvent) => void): void {
    if (r.type === "thread.started" && typeof r.thread_id === "string") {
      emit({ type: "session", sessionId: r.thread_id });
    } else if (r.type === "item.started" || r.type === "item.updated" || r.type === "item.completed") {
      const item = obj(r.item);
      if (!item) return;
      if (item.type === "agent_message" && r.type === "item.completed" && typeof item.text === "string") {
        this.text.reset();
        this.text.append(item.text);
        emit({ type: "text", text: item.text });
      } else if (TOOL_ITEMS.has(String(item.type))) {
        this.toolCall(item, emit);
        if (r.type !== "item.completed") return;
        const status = str(item.status);
        const failed = status === "failed" || status === "declined" || (num(item.exit_code) ?? 0) !== 0 || item.error != null;
        const output =
          item.type === "command_execution"
            ? item.aggregated_output
            : item.type === "mcp_tool_call"
              ? (obj(item.error)?.message ?? obj(item.result)?.structured_content ?? obj(item.result)?.content)
              : status;
        const toolName = item.type === "mcp_tool_call" ? `${str(item.server) ?? "mcp"}.${str(item.tool) ?? "tool"}` : String(item.type);
        emit({ type: "tool-result", toolName, callId: str(item.id), output, isError: failed });
      }
    } else if (r.type === "turn.completed") {
      this.complete = true;
      const u = obj(r.usage);
      this.usage = {
        inputTokens: add(this.usage?.inputTokens, num(u?.input_tokens)),
        cachedInputTokens: add(this.usage?.cachedInputTokens, num(u?.cached_input_tokens)),
        outputTokens: add(this.usage?.outputTokens, num(u?.output_tokens)),
      };
      emit({ type: "usage", usage: this.usage });
    } else if (r.type === "turn.failed") {
      this.failed = str(obj(r.error)?.message) ?? "turn failed";
    } else if (r.type === "error") {
      this.lastError = str(r.message) ?? "error";
    }
  }

  outcome(): StreamOutcome {
    // A top-level error the turn recovered from (a retried request) is not the outcome.
    const error = this.failed ?? (this.complete ? undefined : this.lastError);
    return { text: this.text.value, complete: this.complete, error, usage: this.usage };
  }
}
