import type { AgentEvent, AgentUsage, ModelTokens } from "../types.ts";
import { num, obj, str } from "./cli-agent.ts";
import { type CliEnding, LastSegment, type RecognisedFailure, type StreamOutcome, type StreamParser } from "./run-cli.ts";

/** Gemini CLI's exit code for a missing or refused login before any request (FatalAuthenticationError). */
const GEMINI_AUTH_EXIT = 41;

/**
 * The HTTP status of a failed API request, from Gemini CLI's exit code: headless, it exits with
 * the error's status, which the shell truncates to 8 bits (401 → 145, 429 → 173).
 */
const STATUS_BY_EXIT: Readonly<Record<number, number>> = { 144: 400, 145: 401, 147: 403, 148: 404, 173: 429, 244: 500, 246: 502, 247: 503, 248: 504 };

/** Google's wording of a refused API key (an HTTP 400 with reason API_KEY_INVALID). */
const INVALID_KEY = /API_KEY_INVALID|API key not valid|API key expired/i;

/** Google's wording of an unknown model (`models/x is not found for API version v1beta …`). */
const MODEL_NOT_FOUND = /\bModelNotFoundError\b|models\/\S+ is not found/;

/** The delay Google suggests in a rate limit, as Gemini CLI words it ("Suggested retry after 2s", "Please retry in 1.5s"). */
const RETRY_DELAY = /retry (?:after|in) (\d+(?:\.\d+)?)\s*(ms|s)\b/i;

// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colour codes are what it removes
const ANSI = /\u001b\[[0-9;]*m/g;

/** The tokens of one model in `result.stats.models`. */
function modelTokens(stats: Record<string, unknown> | undefined): ModelTokens {
  return { inputTokens: num(stats?.input_tokens), cachedInputTokens: num(stats?.cached), outputTokens: num(stats?.output_tokens) };
}

const total = (t: ModelTokens) => (t.inputTokens ?? 0) + (t.outputTokens ?? 0);

/**
 * The usage of `result.stats`: the totals, the tokens by model when more than one model used any,
 * and the model that answered. The `init` record names the model asked for, "auto" by default
 * (the CLI's router then picks one per prompt, asking a small model first); the stats name the
 * models really used, and the one that carried the conversation used the most tokens (the
 * router's and other helper calls are small).
 */
export function geminiUsage(stats: Record<string, unknown> | undefined, asked: string | undefined): AgentUsage {
  const used = Object.entries(obj(stats?.models) ?? {})
    .map(([model, value]) => [model, modelTokens(obj(value))] as const)
    .filter(([, tokens]) => total(tokens) > 0);
  const busiest = used.reduce<(typeof used)[number] | undefined>(
    (best, entry) => (best === undefined || total(entry[1]) > total(best[1]) ? entry : best),
    undefined,
  );
  const model = busiest?.[0] ?? (asked === undefined || asked.startsWith("auto") ? undefined : asked);
  return {
    inputTokens: num(stats?.input_tokens),
    cachedInputTokens: num(stats?.cached),
    outputTokens: num(stats?.output_tokens),
    ...(model !== undefined ? { model } : {}),
    ...(used.length > 1 ? { models: Object.fromEntries(used) } : {}),
  };
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
      this.usage = geminiUsage(obj(r.stats), this.model);
      emit({ type: "usage", usage: this.usage });
    }
  }

  outcome(): StreamOutcome {
    const text = this.segments.text();
    const error = this.error ?? (this.complete ? undefined : this.lastError);
    return { text, complete: this.complete, error, usage: this.usage };
  }

  /**
   * A failed call's kind, from the exit code and the error the result record carries (Google's
   * `{"error":{"code":401,…}}` inside the message, or its wording): a refused login, a rate limit
   * (with Google's suggested delay), an unknown model, or death by a signal. Anything else is left
   * to the generic AGENT_CLI_EXIT.
   */
  failure({ exitCode, signal, stderr }: CliEnding): RecognisedFailure | undefined {
    const reported = (this.error ?? this.lastError)?.replace(ANSI, "").trim();
    const lastLine = stderr
      .replace(ANSI, "")
      .split("\n")
      .map((line) => line.trim())
      .filter(Boolean)
      .at(-1);
    const why = reported ?? lastLine ?? `exit code ${exitCode}`;
    if (exitCode === null) return { code: "AGENT_CLI_CRASHED", message: `the CLI was killed by ${signal}${reported ? ` after: ${reported}` : ""}` };
    const quoted = /"code":\s*(\d{3})\b/.exec(reported ?? "");
    const status = quoted ? Number(quoted[1]) : STATUS_BY_EXIT[exitCode];
    const details = status === undefined ? {} : { httpStatus: status };
    if (exitCode === GEMINI_AUTH_EXIT || status === 401 || status === 403 || (status === 400 && INVALID_KEY.test(`${reported} ${stderr}`))) {
      return { code: "AGENT_AUTH_FAILED", message: `the provider refused the CLI's credentials: ${why}`, details };
    }
    if (status === 429) {
      const delay = RETRY_DELAY.exec(`${reported} ${stderr}`);
      const retryAfterMs = delay ? Math.round(Number(delay[1]) * (delay[2] === "ms" ? 1 : 1000)) : undefined;
      return { code: "AGENT_RATE_LIMITED", message: `rate limited: ${why}`, details: { ...details, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) } };
    }
    if (status === 404 || MODEL_NOT_FOUND.test(`${reported ?? ""}\n${stderr}`)) {
      return { code: "AGENT_MODEL_NOT_FOUND", message: `the provider does not know the model: ${why}`, details };
    }
    return undefined;
  }
}
