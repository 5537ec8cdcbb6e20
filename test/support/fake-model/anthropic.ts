/**
 * The Anthropic Messages API for the fake model server: `POST /v1/messages` as JSON or as an SSE
 * stream (message_start, content_block_start / delta / stop for text and tool_use blocks, ping,
 * message_delta with the stop reason and usage, message_stop), and the side calls a client makes
 * besides its model turns, answered with defaults: `POST /v1/messages/count_tokens` and
 * `GET /v1/models[/{id}]`. Errors are shaped like Anthropic's
 * (`{ type: "error", error: { type, message } }`, a `request-id` header, `retry-after` on a 429).
 *
 * Claude Code (ANTHROPIC_BASE_URL) and `@ai-sdk/anthropic` (`baseURL: <url>/v1`) speak it.
 *
 *   const server = startFakeModelServer([anthropicApi]);
 *   server.script({ toolCalls: [{ name: "Bash", input: { command: "ls" } }] }, { json: { ok: true } });
 */
import { chunks, type FakeApi, type FakeContext, type FakeReply, type FakeUsage, type LoggedRequest, replyText, sleep, sse } from "./core.ts";

/** The model an answer names when neither the reply nor the request does. */
export const ANTHROPIC_DEFAULT_MODEL = "claude-fake-1";

/** Usage of a reply that gives none: fixed, so tests can assert it. */
export const ANTHROPIC_DEFAULT_USAGE: FakeUsage = { inputTokens: 100, outputTokens: 20 };

/** The text an unscripted model turn (a title, a quota probe, …) gets. */
export const ANTHROPIC_DEFAULT_TEXT = "OK";

/** Anthropic's error type for an HTTP status. */
export function anthropicErrorType(status: number): string {
  switch (status) {
    case 400:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 402:
      return "billing_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 504:
      return "timeout_error";
    case 529:
      return "overloaded_error";
    default:
      return "api_error";
  }
}

const DEFAULT_MESSAGES: Record<string, string> = {
  authentication_error: "invalid x-api-key",
  permission_error: "Your API key does not have permission to use the specified resource.",
  not_found_error: "model: not found",
  rate_limit_error: "Number of request tokens has exceeded your per-minute rate limit",
  overloaded_error: "Overloaded",
};

let sequence = 0;
const nextId = (prefix: string) => `${prefix}_fake${String(++sequence).padStart(6, "0")}`;

/** An Anthropic error response for `status`. */
export function anthropicError(status: number, options: { type?: string; message?: string; headers?: Record<string, string> } = {}): Response {
  const type = options.type ?? anthropicErrorType(status);
  const headers: Record<string, string> = { "request-id": nextId("req") };
  if (status === 429) headers["retry-after"] = "1";
  return Response.json(
    { type: "error", error: { type, message: options.message ?? DEFAULT_MESSAGES[type] ?? `fake ${type}` } },
    {
      status,
      headers: { ...headers, ...options.headers },
    },
  );
}

type Body = {
  model?: unknown;
  stream?: unknown;
  tools?: Array<{ name?: unknown; type?: unknown }>;
  tool_choice?: { type?: unknown; name?: unknown };
  messages?: unknown;
  system?: unknown;
};

const bodyOf = (request: LoggedRequest): Body => (typeof request.body === "object" && request.body !== null ? (request.body as Body) : {});

/**
 * Whether the request asks for its answer through the AI SDK's `json` tool (its structured output
 * on a model without native `output_config.format`): the tool is offered and a tool call is
 * required (`any`, or that tool by name).
 */
function jsonToolRequired(body: Body): boolean {
  const choice = body.tool_choice;
  const required = choice?.type === "any" || (choice?.type === "tool" && choice.name === "json");
  return required && (body.tools ?? []).some((t) => t.name === "json");
}

/** Anthropic's usage record: input_tokens excludes cache reads and writes. */
function usageOf(usage: FakeUsage | undefined): Record<string, number> {
  const u = usage ?? ANTHROPIC_DEFAULT_USAGE;
  const cached = Math.min(u.cachedInputTokens ?? 0, u.inputTokens);
  return {
    input_tokens: u.inputTokens - cached,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: cached,
    output_tokens: u.outputTokens,
  };
}

type Block = { type: "text"; text: string } | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> };

/** The content blocks and stop reason a reply comes to for this request. */
function answerOf(reply: FakeReply, body: Body): { blocks: Block[]; stopReason: string } {
  const blocks: Block[] = [];
  const toolCalls = reply.toolCalls ?? [];
  if (reply.json !== undefined && reply.text === undefined && toolCalls.length === 0 && jsonToolRequired(body)) {
    // The AI SDK's jsonTool mode reads the value from the forced `json` tool's input.
    return { blocks: [{ type: "tool_use", id: nextId("toolu"), name: "json", input: reply.json as Record<string, unknown> }], stopReason: "tool_use" };
  }
  const text = replyText(reply);
  if (text !== "" || toolCalls.length === 0) blocks.push({ type: "text", text });
  for (const call of toolCalls) blocks.push({ type: "tool_use", id: call.id ?? nextId("toolu"), name: call.name, input: call.input });
  return { blocks, stopReason: toolCalls.length > 0 ? "tool_use" : "end_turn" };
}

function messageOf(model: string, blocks: Block[], stopReason: string | null, usage: Record<string, number>) {
  return { id: nextId("msg"), type: "message", role: "assistant", model, content: blocks, stop_reason: stopReason, stop_sequence: null, usage };
}

async function messages({ request, take }: FakeContext): Promise<Response> {
  const body = bodyOf(request);
  const reply = take() ?? { text: ANTHROPIC_DEFAULT_TEXT };
  await sleep(reply.delayMs);
  if (reply.error) return anthropicError(reply.error.status, reply.error);
  const model = reply.model ?? (typeof body.model === "string" ? body.model : ANTHROPIC_DEFAULT_MODEL);
  const { blocks, stopReason } = answerOf(reply, body);
  const usage = usageOf(reply.usage);
  const headers = { "request-id": nextId("req") };
  if (body.stream !== true) return Response.json(messageOf(model, blocks, stopReason, usage), { headers });

  return sse(async (send) => {
    const start = messageOf(model, [], null, { ...usage, output_tokens: Math.min(1, usage.output_tokens ?? 0) });
    send({ type: "message_start", message: start }, "message_start");
    send({ type: "ping" }, "ping");
    for (const [index, block] of blocks.entries()) {
      if (block.type === "text") {
        send({ type: "content_block_start", index, content_block: { type: "text", text: "" } }, "content_block_start");
        for (const piece of chunks(block.text)) {
          await sleep(reply.chunkDelayMs);
          send({ type: "content_block_delta", index, delta: { type: "text_delta", text: piece } }, "content_block_delta");
        }
      } else {
        send({ type: "content_block_start", index, content_block: { type: "tool_use", id: block.id, name: block.name, input: {} } }, "content_block_start");
        for (const piece of chunks(JSON.stringify(block.input))) {
          await sleep(reply.chunkDelayMs);
          send({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: piece } }, "content_block_delta");
        }
      }
      send({ type: "content_block_stop", index }, "content_block_stop");
    }
    send({ type: "message_delta", delta: { stop_reason: stopReason, stop_sequence: null }, usage }, "message_delta");
    send({ type: "message_stop" }, "message_stop");
  }, headers);
}

/** A rough token count of a request body (count_tokens' default answer): a token per 4 characters. */
function roughTokens(body: Body): number {
  return Math.max(1, Math.ceil(JSON.stringify({ system: body.system, messages: body.messages, tools: body.tools }).length / 4));
}

function modelInfo(id: string) {
  return { type: "model", id, display_name: id, created_at: "2025-01-01T00:00:00Z" };
}

const MESSAGES = "/v1/messages";
const COUNT_TOKENS = "/v1/messages/count_tokens";
const MODELS = /^\/v1\/models(?:\/([^/]+))?$/;

/** The Anthropic Messages API module of the fake model server. */
export const anthropicApi: FakeApi = {
  name: "anthropic",
  routes: (method, path) => (method === "POST" && (path === MESSAGES || path === COUNT_TOKENS)) || (method === "GET" && MODELS.test(path)),
  describe: (body, path) => {
    const b = (typeof body === "object" && body !== null ? body : {}) as Body;
    return {
      ...(typeof b.model === "string" ? { model: b.model } : {}),
      ...(path === MESSAGES ? { stream: b.stream === true } : {}),
      modelTurn: path === MESSAGES,
    };
  },
  handle: (context) => {
    const { request } = context;
    const path = request.path.split("?")[0]!;
    if (path === MESSAGES) return messages(context);
    if (path === COUNT_TOKENS) return Response.json({ input_tokens: roughTokens(bodyOf(request)) });
    const id = MODELS.exec(path)?.[1];
    if (id !== undefined) return Response.json(modelInfo(decodeURIComponent(id)));
    return Response.json({ data: [modelInfo(ANTHROPIC_DEFAULT_MODEL)], has_more: false, first_id: ANTHROPIC_DEFAULT_MODEL, last_id: ANTHROPIC_DEFAULT_MODEL });
  },
};

/** A request that is a model turn of Claude Code's main loop (it offers its tools), not a side call (a title, a quota probe). */
export const claudeMainTurn = (request: LoggedRequest): boolean =>
  request.api === "anthropic" && request.path.startsWith(MESSAGES) && !request.path.startsWith(COUNT_TOKENS) && (bodyOf(request).tools?.length ?? 0) > 0;
