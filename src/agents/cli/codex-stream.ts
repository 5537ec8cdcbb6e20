import type { AgentEvent, AgentUsage } from "../types.ts";
import { add, num, obj, str } from "./cli-agent.ts";
import { AUTH_FAILURE_PATTERN } from "./constants.ts";
import { CappedText, type StreamFailure, type StreamOutcome, type StreamParser } from "./run-cli.ts";

const TOOL_ITEMS = new Set(["command_execution", "mcp_tool_call", "web_search", "file_change"]);

/** Codex's notice that it will send the failed request again: `Reconnecting... 2/5 (<why>)`. */
const RECONNECTING = /^Reconnecting\.\.\. \d+\/\d+ \((.*)\)$/s;

/** Codex's notice that the provider answered with another model than the one asked for. */
const REROUTED = /^model rerouted: (\S+) -> (\S+)/;

/**
 * What a Codex error message says the failure was. Codex words an HTTP error as
 * `unexpected status 401 Unauthorized: <body message>, url: …` (401, 403), `exceeded retry limit,
 * last status: 429 Too Many Requests` or `Quota exceeded. …` (429), and the body's message alone
 * for a 404 (OpenAI's `The model \`x\` does not exist or you do not have access to it.`).
 */
export function classifyCodexError(message: string): StreamFailure | undefined {
  if (/\bstatus:? (?:401|403)\b/.test(message) || AUTH_FAILURE_PATTERN.test(message)) {
    return { code: "AGENT_AUTH_FAILED", message: `the CLI is not logged in or its credentials were refused: ${message}` };
  }
  if (/\bstatus:? 429\b|too many requests|rate limit|quota/i.test(message)) {
    return { code: "AGENT_RATE_LIMITED", message: `the provider's rate limit or quota stopped the call: ${message}` };
  }
  if (/\bmodel_not_found\b|\bmodel `[^`]*` does not exist|\bunknown model\b|\bmodel (?:`[^`]*` )?(?:is )?not found\b/i.test(message)) {
    return { code: "AGENT_MODEL_NOT_FOUND", message: `the provider does not know the model: ${message}` };
  }
  return undefined;
}

/**
 * Parses `codex exec --json` (thread.*, turn.*, item.*, error). A retry notice for a refused key
 * ends the call at once (Codex would send the request five more times); a rate limit is left to
 * Codex, which honours the provider's `retry-after` itself.
 */
export class CodexStreamParser implements StreamParser {
  private readonly text: CappedText;
  private complete = false;
  private failed: string | undefined;
  private lastError: string | undefined;
  private stopping: StreamFailure | undefined;
  private usage: AgentUsage | undefined;
  /** The model that answered, when the provider named another than the one asked for. */
  private answeredBy: string | undefined;
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

  private item(kind: unknown, item: Record<string, unknown>, emit: (event: AgentEvent) => void): void {
    if (item.type === "agent_message" && kind === "item.completed" && typeof item.text === "string") {
      this.text.reset();
      this.text.append(item.text);
      emit({ type: "text", text: item.text });
    } else if (item.type === "error" && typeof item.message === "string") {
      // Warnings in the item stream ("model metadata not found", "model rerouted: a -> b").
      const rerouted = REROUTED.exec(item.message);
      if (rerouted) this.answeredBy = rerouted[2];
    } else if (TOOL_ITEMS.has(String(item.type))) {
      this.toolCall(item, emit);
      if (kind !== "item.completed") return;
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
  }

  record(r: Record<string, unknown>, emit: (event: AgentEvent) => void): void {
    if (r.type === "thread.started" && typeof r.thread_id === "string") {
      emit({ type: "session", sessionId: r.thread_id });
    } else if (r.type === "item.started" || r.type === "item.updated" || r.type === "item.completed") {
      const item = obj(r.item);
      if (item) this.item(r.type, item, emit);
    } else if (r.type === "turn.completed") {
      this.complete = true;
      const u = obj(r.usage);
      this.usage = {
        inputTokens: add(this.usage?.inputTokens, num(u?.input_tokens)),
        cachedInputTokens: add(this.usage?.cachedInputTokens, num(u?.cached_input_tokens)),
        outputTokens: add(this.usage?.outputTokens, num(u?.output_tokens)),
        ...(this.answeredBy !== undefined ? { model: this.answeredBy } : {}),
      };
      emit({ type: "usage", usage: this.usage });
    } else if (r.type === "turn.failed") {
      this.failed = str(obj(r.error)?.message) ?? "turn failed";
    } else if (r.type === "error") {
      this.lastError = str(r.message) ?? "error";
      const retrying = RECONNECTING.exec(this.lastError);
      const failure = retrying ? classifyCodexError(retrying[1]!) : undefined;
      if (failure?.code === "AGENT_AUTH_FAILED") this.stopping = failure;
    }
  }

  stopNow(): boolean {
    return this.stopping !== undefined;
  }

  outcome(): StreamOutcome {
    // A top-level error the turn recovered from (a retried request) is not the outcome.
    const error = this.failed ?? (this.complete ? undefined : this.lastError);
    const failure = this.stopping ?? (error === undefined ? undefined : classifyCodexError(error));
    return { text: this.text.value, complete: this.complete, error, usage: this.usage, ...(failure ? { failure } : {}) };
  }
}
