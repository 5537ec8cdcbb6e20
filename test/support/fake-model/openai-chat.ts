/**
 * The OpenAI Chat Completions API for the fake model server: `POST /v1/chat/completions` as JSON
 * or as SSE `chat.completion.chunk`s (text deltas, tool calls with their arguments streamed in
 * pieces, `finish_reason`, and a usage chunk when `stream_options.include_usage` asks), and
 * `GET /v1/models`. Errors have OpenAI's shape, `{ error: { message, type, code } }`.
 *
 * Requests `isSideRequest` recognises (a client's title calls) are not model turns: they
 * take no scripted reply and get a short text answer. A model turn with no scripted reply left gets
 * a 400 (a client does not retry it), so a test that scripted too few replies fails at once.
 */
import { chunks, type FakeApi, type FakeContext, type FakeReply, type FakeUsage, replyText, sleep, sse } from "./core.ts";

type ChatBody = {
  model?: string;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  messages?: { role?: string; content?: unknown }[];
  tools?: unknown[];
};

/** The text of a chat message's content (a string, or the text parts of an array). */
export function messageText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part) => (typeof part === "object" && part !== null && typeof (part as { text?: unknown }).text === "string" ? (part as { text: string }).text : ""))
    .join("");
}

/**
 * Whether a request is a client's side call rather than the task's model turn: a request without
 * tools whose system prompt asks for a title (OpenCode's session title, when not given `--title`).
 */
export function isSideRequest(body: unknown): boolean {
  const b = body as ChatBody | undefined;
  if (!b || (b.tools?.length ?? 0) > 0) return false;
  const system = (b.messages ?? [])
    .filter((m) => m.role === "system")
    .map((m) => messageText(m.content))
    .join("\n");
  return /\btitle generator\b|generate a (?:short |brief )?title/i.test(system);
}

/** The text of the last user or tool message of a request (what the model was just told). */
export function lastInput(body: unknown): string {
  const messages = (body as ChatBody | undefined)?.messages ?? [];
  const last = [...messages].reverse().find((m) => m.role === "user" || m.role === "tool");
  return last ? messageText(last.content) : "";
}

const DEFAULT_USAGE: FakeUsage = { inputTokens: 10, outputTokens: 5 };
/** The side-request answer (a title). */
const SIDE_ANSWER = "Fake task";
let ids = 0;
const nextId = (prefix: string) => `${prefix}${Date.now().toString(36)}${(++ids).toString(36)}`;

function usageOf(usage: FakeUsage) {
  return {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
    prompt_tokens_details: { cached_tokens: usage.cachedInputTokens ?? 0 },
    completion_tokens_details: { reasoning_tokens: usage.reasoningTokens ?? 0 },
  };
}

function toolCallsOf(reply: FakeReply) {
  return (reply.toolCalls ?? []).map((call) => ({
    id: call.id ?? nextId("call_"),
    type: "function" as const,
    function: { name: call.name, arguments: JSON.stringify(call.input) },
  }));
}

/** An OpenAI-shaped error response. */
export function errorResponse(error: NonNullable<FakeReply["error"]>): Response {
  const type =
    error.type ??
    (error.status === 401
      ? "invalid_request_error"
      : error.status === 403
        ? "permission_denied"
        : error.status === 404
          ? "invalid_request_error"
          : error.status === 429
            ? "rate_limit_exceeded"
            : error.status >= 500
              ? "server_error"
              : "invalid_request_error");
  const code = error.status === 401 ? "invalid_api_key" : error.status === 404 ? "model_not_found" : error.status === 429 ? "rate_limit_exceeded" : null;
  return Response.json(
    { error: { message: error.message ?? `fake model server: HTTP ${error.status}`, type, param: null, code } },
    { status: error.status, headers: error.headers },
  );
}

async function answer(reply: FakeReply, body: ChatBody): Promise<Response> {
  await sleep(reply.delayMs);
  if (reply.error) return errorResponse(reply.error);
  const model = reply.model ?? body.model ?? "fake-model";
  const text = replyText(reply);
  const toolCalls = toolCallsOf(reply);
  const usage = usageOf(reply.usage ?? DEFAULT_USAGE);
  const finish = toolCalls.length > 0 ? "tool_calls" : "stop";
  const id = nextId("chatcmpl-");
  const created = Math.floor(Date.now() / 1000);
  if (!body.stream) {
    const message = {
      role: "assistant",
      content: text === "" && toolCalls.length > 0 ? null : text,
      ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
    };
    return Response.json({ id, object: "chat.completion", created, model, choices: [{ index: 0, message, logprobs: null, finish_reason: finish }], usage });
  }
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => ({ id, object: "chat.completion.chunk", created, model, choices, ...extra });
  const delta = (d: Record<string, unknown>, finishReason: string | null = null) =>
    chunk([{ index: 0, delta: d, logprobs: null, finish_reason: finishReason }]);
  return sse(async (send) => {
    send(delta({ role: "assistant", content: "" }));
    for (const piece of chunks(text)) {
      await sleep(reply.chunkDelayMs);
      send(delta({ content: piece }));
    }
    for (const [index, call] of toolCalls.entries()) {
      send(delta({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.function.name, arguments: "" } }] }));
      for (const piece of chunks(call.function.arguments, 2)) {
        await sleep(reply.chunkDelayMs);
        send(delta({ tool_calls: [{ index, function: { arguments: piece } }] }));
      }
    }
    send(delta({}, finish));
    if (body.stream_options?.include_usage) send(chunk([], { usage }));
    send("[DONE]");
  });
}

/** The Chat Completions API module. */
export const openaiChat: FakeApi = {
  name: "openai-chat",
  routes: (method, path) => (method === "POST" && /\/chat\/completions$/.test(path)) || (method === "GET" && /\/models$/.test(path)),
  describe: (body, path) => {
    if (!path.endsWith("/chat/completions")) return { modelTurn: false };
    const b = body as ChatBody | undefined;
    return { model: b?.model, stream: b?.stream === true, modelTurn: !isSideRequest(body) };
  },
  handle: ({ request, take }: FakeContext) => {
    if (request.method === "GET") {
      const models = ["fake-model"].map((id) => ({ id, object: "model", created: 0, owned_by: "fake" }));
      return Response.json({ object: "list", data: models });
    }
    const body = (request.body ?? {}) as ChatBody;
    const reply = take();
    if (reply) return answer(reply, body);
    if (isSideRequest(body)) return answer({ text: SIDE_ANSWER, usage: { inputTokens: 20, outputTokens: 2 } }, body);
    return errorResponse({ status: 400, message: "fake model server: no scripted reply left for this request" });
  },
};
