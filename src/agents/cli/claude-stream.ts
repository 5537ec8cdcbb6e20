import { SmithersError } from "../../errors/index.ts";
import type { AgentEvent, AgentUsage } from "../types.ts";
import { add, num, obj, str } from "./cli-agent.ts";
import { CappedText, type CliEnding, type RecognisedFailure, type StreamOutcome, type StreamParser } from "./run-cli.ts";

/** What Claude Code prints on stderr when it refuses `--dangerously-skip-permissions` as root (without IS_SANDBOX=1). */
const ROOT_REFUSAL = /cannot be used with root\/sudo privileges/i;

/** The model Claude Code names on the messages it made up itself (an API error shown as a reply). */
const SYNTHETIC_MODEL = "<synthetic>";

/** A failed API request as the stream describes it: Claude Code's error kind, the HTTP status and Anthropic's error type. */
type ApiFailure = { kind?: string; status?: number; type?: string; message?: string };

const isAuth = (f: ApiFailure) => f.kind === "authentication_failed" || f.status === 401 || f.status === 403 || f.type === "authentication_error";
const isRateLimit = (f: ApiFailure) => f.kind === "rate_limit" || f.status === 429 || f.type === "rate_limit_error";
const isModelNotFound = (f: ApiFailure) => f.kind === "model_not_found" || (f.status === 404 && f.type === "not_found_error");

/** Content of a tool_result block: its text when it is text blocks, else as it came. */
function toolOutput(content: unknown): unknown {
  if (!Array.isArray(content)) return content;
  const texts = content.map((block) => (obj(block)?.type === "text" ? str(obj(block)?.text) : undefined));
  return texts.every((t) => t !== undefined) ? texts.join("") : content;
}

/**
 * The cost Claude Code reports, when it knows it: `total_cost_usd`, unless a model in `modelUsage`
 * was priced on a guess (`costBasis: "unknown"`, a model missing from its price list), which is no
 * cost at all (the caller's `pricing` applies instead).
 */
function reportedCost(result: Record<string, unknown>): number | undefined {
  const perModel = obj(result.modelUsage);
  if (perModel && Object.values(perModel).some((m) => obj(m)?.costBasis === "unknown")) return undefined;
  return num(result.total_cost_usd);
}

/**
 * Parses `claude -p --output-format stream-json --verbose --include-partial-messages`
 * (system/init, stream_event, assistant, user, system/api_retry, result) and recognises its failures: a refused login ends the call at the
 * first retry line that says so (Claude Code would retry it for minutes), a rate limit it gave up
 * on, an unknown model, and a refusal to skip permissions as root.
 */
export class ClaudeStreamParser implements StreamParser {
  private readonly lastText: CappedText;
  private finalText: string | undefined;
  private sessionId: string | undefined;
  private initModel: string | undefined;
  /** The model named by the last real answer of the main conversation. */
  private answeredModel: string | undefined;
  private complete = false;
  private error: string | undefined;
  private apiFailure: ApiFailure | undefined;
  private lastRetry: (ApiFailure & { delayMs?: number; attempt?: number }) | undefined;
  private usage: AgentUsage | undefined;
  private readonly toolNames = new Map<string, string>();
  /** The id of the message the stream events are about, and the messages whose text came as deltas. */
  private streamingMessage: string | undefined;
  private readonly streamedMessages = new Set<string>();

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
    if (r.type === "system") this.system(r);
    else if (r.type === "stream_event") this.streamEvent(r, emit);
    else if (r.type === "assistant") this.assistant(r, emit);
    else if (r.type === "user") this.user(r, emit);
    else if (r.type === "result") this.result(r, emit);
  }

  private system(r: Record<string, unknown>): void {
    if (r.subtype === "init") {
      this.initModel = str(r.model) ?? this.initModel;
    } else if (r.subtype === "api_retry") {
      const retry = { kind: str(r.error), status: num(r.error_status), delayMs: num(r.retry_delay_ms), attempt: num(r.attempt) };
      this.lastRetry = retry;
      // Claude Code retries a refused key (and an unknown model) for minutes; no retry can fix either: end the call now.
      const why = `the provider answered ${retry.status ?? "an error"} (${retry.kind ?? "unknown"}) and Claude Code began retrying it`;
      if (isAuth(retry))
        throw new SmithersError("AGENT_AUTH_FAILED", `ClaudeCodeAgent: the credentials were refused: ${why}`, { agent: "ClaudeCodeAgent", retry });
      if (isModelNotFound(retry))
        throw new SmithersError("AGENT_MODEL_NOT_FOUND", `ClaudeCodeAgent: the model is not known: ${why}`, { agent: "ClaudeCodeAgent", retry });
    }
  }

  /** A raw API event (`--include-partial-messages`): text as it arrives, so an operator sees the agent write. */
  private streamEvent(r: Record<string, unknown>, emit: (event: AgentEvent) => void): void {
    const event = obj(r.event);
    if (event?.type === "message_start") this.streamingMessage = str(obj(event.message)?.id);
    const delta = obj(event?.delta);
    if (event?.type !== "content_block_delta" || delta?.type !== "text_delta" || typeof delta.text !== "string" || delta.text === "") return;
    if (this.streamingMessage !== undefined) this.streamedMessages.add(this.streamingMessage);
    emit({ type: "text", text: delta.text });
  }

  private assistant(r: Record<string, unknown>, emit: (event: AgentEvent) => void): void {
    const message = obj(r.message);
    // A failed request comes back as a made-up assistant message carrying an `error` kind.
    if (typeof r.error === "string") {
      this.apiFailure = { kind: r.error, status: num(r.api_error_status), type: str(r.api_error_type) };
    }
    const model = str(message?.model);
    if (model !== undefined && model !== SYNTHETIC_MODEL && (r.parent_tool_use_id ?? null) === null) this.answeredModel = model;
    const content = message?.content;
    if (!Array.isArray(content)) return;
    // Its text was already reported piece by piece from the stream events.
    const streamed = this.streamedMessages.has(str(message?.id) ?? "");
    let text = "";
    for (const raw of content) {
      const block = obj(raw);
      if (block?.type === "text" && typeof block.text === "string") {
        text += block.text;
        if (!streamed) emit({ type: "text", text: block.text });
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
  }

  private user(r: Record<string, unknown>, emit: (event: AgentEvent) => void): void {
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
  }

  private result(r: Record<string, unknown>, emit: (event: AgentEvent) => void): void {
    this.complete = true;
    this.finalText = str(r.result);
    if (r.is_error === true || (typeof r.subtype === "string" && r.subtype !== "success")) {
      const errors = Array.isArray(r.errors) ? r.errors.filter((e) => typeof e === "string").join("; ") : "";
      this.error = this.finalText || errors || String(r.subtype ?? "error");
      const status = num(r.api_error_status);
      const type = str(r.api_error_type);
      if (status !== undefined || type !== undefined) this.apiFailure = { ...this.apiFailure, status, type };
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
      costUsd: reportedCost(r),
      // The model that answered (the API's own word), else the one Claude Code asked for.
      model: this.answeredModel ?? this.initModel,
    };
    emit({ type: "usage", usage: this.usage });
  }

  outcome(): StreamOutcome {
    const text = new CappedText(this.maxBytes);
    text.append(this.finalText ?? this.lastText.value);
    const authError = this.apiFailure !== undefined && isAuth(this.apiFailure);
    return { text: text.value, complete: this.complete, error: this.error, authError, usage: this.usage };
  }

  failure(ending: CliEnding): RecognisedFailure | undefined {
    if (!this.complete && ROOT_REFUSAL.test(ending.stderr)) {
      return {
        code: "AGENT_ROOT_REFUSED",
        message:
          "Claude Code refuses to skip its permission prompts as root unless IS_SANDBOX=1; the agent sets it for yolo unless the environment sets IS_SANDBOX itself",
      };
    }
    // The failed request the CLI gave up on (a retry line alone may have been followed by success).
    const failed = this.apiFailure;
    if (failed === undefined) return undefined;
    if (isAuth(failed)) return { code: "AGENT_AUTH_FAILED", message: `the credentials were refused: ${this.error ?? failed.kind}` };
    if (isRateLimit(failed)) {
      // The CLI's own next delay (it follows the provider's retry-after) is the one to wait before trying again.
      const retryAfterMs = this.lastRetry !== undefined && isRateLimit(this.lastRetry) ? this.lastRetry.delayMs : undefined;
      return {
        code: "AGENT_RATE_LIMITED",
        message: `the provider's rate limit held after Claude Code's retries: ${this.error ?? failed.kind}`,
        details: retryAfterMs === undefined ? {} : { retryAfterMs },
      };
    }
    if (isModelNotFound(failed)) return { code: "AGENT_MODEL_NOT_FOUND", message: `the model is not known: ${this.error ?? failed.kind}` };
    return undefined;
  }
}
