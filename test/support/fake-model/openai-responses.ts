/**
 * The OpenAI Responses API for the fake model server: `POST /v1/responses` (SSE when the request
 * says `stream: true`, else one JSON response), and the side calls clients make around it
 * (`GET /v1/models`, `GET /v1/models/{id}`), answered with defaults.
 *
 * A streamed turn is what OpenAI sends: response.created, response.in_progress, then per output
 * item output_item.added, its deltas (output_text.delta / function_call_arguments.delta) and
 * their done events, output_item.done, and response.completed carrying the usage. The
 * `openai-model` header names the model that answered (Codex reports a difference as a reroute).
 * Errors are `{ error: { message, type, code, param } }` with the reply's status and headers
 * (e.g. `retry-after`).
 */
import { chunks, type FakeApi, type FakeContext, type FakeReply, type FakeUsage, replyText, sleep, sse } from "./core.ts";

const DEFAULT_USAGE: FakeUsage = { inputTokens: 50, outputTokens: 10 };

/** The `code` OpenAI puts on an error of this status. */
const ERROR_CODES: Record<number, { type: string; code: string | null }> = {
  400: { type: "invalid_request_error", code: null },
  401: { type: "invalid_request_error", code: "invalid_api_key" },
  403: { type: "invalid_request_error", code: "unsupported_country_region_territory" },
  404: { type: "invalid_request_error", code: "model_not_found" },
  429: { type: "requests", code: "rate_limit_exceeded" },
  500: { type: "server_error", code: null },
};

let sequence = 0;
const id = (prefix: string) => `${prefix}_fake${(++sequence).toString(16).padStart(8, "0")}`;

/**
 * The OpenAI error body and status for a reply's `error`. A given `type` is also the `code`, as
 * in OpenAI's `insufficient_quota`; without one, the status's usual type and code.
 */
export function openAiError(error: NonNullable<FakeReply["error"]>): Response {
  const known = ERROR_CODES[error.status] ?? { type: "api_error", code: null };
  const message = error.message ?? `fake model server: HTTP ${error.status}`;
  return Response.json(
    { error: { message, type: error.type ?? known.type, param: null, code: error.type ?? known.code } },
    { status: error.status, headers: { "x-request-id": id("req"), ...error.headers } },
  );
}

type OutputItem = Record<string, unknown> & { id: string; type: string };

/** The output items of a reply: its text as one assistant message, then one function_call per tool call. */
function outputItems(reply: FakeReply): OutputItem[] {
  const items: OutputItem[] = [];
  const text = replyText(reply);
  if (text !== "" || !reply.toolCalls?.length) {
    items.push({
      id: id("msg"),
      type: "message",
      status: "completed",
      role: "assistant",
      content: [{ type: "output_text", text, annotations: [], logprobs: [] }],
    });
  }
  for (const call of reply.toolCalls ?? []) {
    items.push({
      id: id("fc"),
      type: "function_call",
      status: "completed",
      call_id: call.id ?? id("call"),
      name: call.name,
      arguments: JSON.stringify(call.input),
    });
  }
  return items;
}

function usageOf(reply: FakeReply) {
  const u = reply.usage ?? DEFAULT_USAGE;
  return {
    input_tokens: u.inputTokens,
    input_tokens_details: { cached_tokens: u.cachedInputTokens ?? 0 },
    output_tokens: u.outputTokens,
    output_tokens_details: { reasoning_tokens: u.reasoningTokens ?? 0 },
    total_tokens: u.inputTokens + u.outputTokens,
  };
}

function responseObject(responseId: string, model: string, status: string, output: OutputItem[], usage: ReturnType<typeof usageOf> | null) {
  return {
    id: responseId,
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    status,
    error: null,
    incomplete_details: null,
    model,
    output,
    parallel_tool_calls: true,
    tool_choice: "auto",
    tools: [],
    usage,
  };
}

/** One streamed turn, event by event as OpenAI sends them. */
function stream(reply: FakeReply, model: string, headers: Record<string, string> = {}): Response {
  return sse(async (send) => {
    let seq = 0;
    const emit = (data: Record<string, unknown>) => send({ ...data, sequence_number: seq++ }, String(data.type));
    const responseId = id("resp");
    const items = outputItems(reply);
    emit({ type: "response.created", response: responseObject(responseId, model, "in_progress", [], null) });
    emit({ type: "response.in_progress", response: responseObject(responseId, model, "in_progress", [], null) });
    for (const [index, item] of items.entries()) {
      const at = { item_id: item.id, output_index: index };
      if (item.type === "message") {
        const text = (item.content as { text: string }[])[0]!.text;
        emit({ type: "response.output_item.added", output_index: index, item: { ...item, status: "in_progress", content: [] } });
        emit({ type: "response.content_part.added", ...at, content_index: 0, part: { type: "output_text", text: "", annotations: [], logprobs: [] } });
        for (const piece of chunks(text)) {
          await sleep(reply.chunkDelayMs);
          emit({ type: "response.output_text.delta", ...at, content_index: 0, delta: piece, logprobs: [] });
        }
        emit({ type: "response.output_text.done", ...at, content_index: 0, text, logprobs: [] });
        emit({ type: "response.content_part.done", ...at, content_index: 0, part: { type: "output_text", text, annotations: [], logprobs: [] } });
      } else {
        const args = String(item.arguments);
        emit({ type: "response.output_item.added", output_index: index, item: { ...item, status: "in_progress", arguments: "" } });
        for (const piece of chunks(args)) {
          await sleep(reply.chunkDelayMs);
          emit({ type: "response.function_call_arguments.delta", ...at, delta: piece });
        }
        emit({ type: "response.function_call_arguments.done", ...at, name: item.name, arguments: args });
      }
      emit({ type: "response.output_item.done", output_index: index, item });
    }
    emit({ type: "response.completed", response: responseObject(responseId, model, "completed", items, usageOf(reply)) });
  }, headers);
}

const MODEL_ENTRY = (model: string) => ({ id: model, object: "model", created: 1_700_000_000, owned_by: "fake-model-server" });

export const openAiResponses: FakeApi = {
  name: "openai-responses",
  routes: (method, path) => (method === "POST" && /\/responses$/.test(path)) || (method === "GET" && /\/models(?:\/[^/]+)?$/.test(path)),
  describe: (body, path) => {
    if (!path.endsWith("/responses")) return { modelTurn: false };
    const b = (body ?? {}) as { model?: unknown; stream?: unknown };
    return { model: typeof b.model === "string" ? b.model : undefined, stream: b.stream === true };
  },
  async handle({ request, take }: FakeContext): Promise<Response> {
    if (request.method === "GET") {
      const one = /\/models\/([^/]+)$/.exec(request.path.split("?")[0]!);
      return Response.json(one ? MODEL_ENTRY(decodeURIComponent(one[1]!)) : { object: "list", data: [MODEL_ENTRY("fake-model")] });
    }
    const reply = take() ?? { text: "" };
    await sleep(reply.delayMs);
    if (reply.error) return openAiError(reply.error);
    const model = reply.model ?? request.model ?? "fake-model";
    const headers = { "openai-model": model, "x-request-id": id("req") };
    if (request.stream) return stream(reply, model, headers);
    return Response.json(responseObject(id("resp"), model, "completed", outputItems(reply), usageOf(reply)), { headers });
  },
};
