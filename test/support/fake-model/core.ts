/**
 * A fake model server for tests: one HTTP server on 127.0.0.1 that speaks the providers' APIs
 * (each in its own module: anthropic.ts, openai-responses.ts, openai-chat.ts, gemini.ts) and
 * answers from a script of replies, logging every request. Real agent CLIs and the AI SDK's
 * provider packages are pointed at it with their base-URL settings, so they run their real code
 * paths with nothing leaving the machine.
 *
 * A reply is taken from the front of the script by the first request it matches (`match`, default:
 * any request of a model turn); requests no reply matches (a CLI's side calls: titles, token counts,
 * model lists) are answered by the API module's own default, and logged with `scripted: false`.
 */

/** One tool call a reply asks for. */
export type FakeToolCall = { name: string; input: Record<string, unknown>; id?: string };

/** Token counts a reply reports (the API module maps them to its own usage shape). */
export type FakeUsage = { inputTokens: number; outputTokens: number; cachedInputTokens?: number; reasoningTokens?: number };

/** What a model turn answers. */
export type FakeReply = {
  /** Answer only a request this accepts (default: any model turn). */
  match?: (request: LoggedRequest) => boolean;
  /** Text of the answer (streamed in a few chunks where the API streams). */
  text?: string;
  /** An answer that is this value as JSON text (structured output). */
  json?: unknown;
  /** Tool calls: the turn ends asking for them (the client runs them and sends the results). */
  toolCalls?: FakeToolCall[];
  /** The model the answer says it came from (default: the one asked for). */
  model?: string;
  usage?: FakeUsage;
  /** Wait this long before answering (ms). */
  delayMs?: number;
  /** Between streamed chunks (ms). */
  chunkDelayMs?: number;
  /** Answer with this HTTP error instead (the API module shapes the body like the provider's). */
  error?: { status: number; message?: string; type?: string; headers?: Record<string, string> };
};

/** A request as the server saw it. */
export type LoggedRequest = {
  api: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body: unknown;
  /** Whether a scripted reply answered it (false: the API module's default). */
  scripted?: boolean;
  /** The model the request asked for, when the API names one. */
  model?: string;
  /** Whether the request asked for a stream. */
  stream?: boolean;
};

/** What an API module gets for one request it routes. */
export type FakeContext = {
  request: LoggedRequest;
  /** Takes the first scripted reply that matches this request, or undefined (then answer the default). */
  take: (predicate?: (reply: FakeReply) => boolean) => FakeReply | undefined;
};

/** One provider API: which requests it routes, and how it answers them. */
export type FakeApi = {
  name: string;
  /** Whether this module serves `method path` (path without the query). */
  routes: (method: string, path: string) => boolean;
  /** The model a request names, and whether it streams (for the log), from its parsed body and URL. */
  describe?: (body: unknown, path: string, url: URL) => { model?: string; stream?: boolean; modelTurn?: boolean };
  handle: (context: FakeContext) => Response | Promise<Response>;
};

export type FakeModelServer = {
  /** http://HOST:PORT (no trailing slash): the address it listens on, 127.0.0.1 unless told. */
  url: string;
  port: number;
  /** Adds replies to the end of the script. */
  script: (...replies: FakeReply[]) => void;
  /** Every request so far, in order. */
  requests: LoggedRequest[];
  /** Scripted replies not taken yet. */
  pending: () => number;
  stop: () => Promise<void>;
};

export const sleep = (ms: number | undefined) => (ms && ms > 0 ? Bun.sleep(ms) : Promise.resolve());

/** The text a reply answers with: its text, or its JSON value as text. */
export const replyText = (reply: FakeReply): string => reply.text ?? (reply.json === undefined ? "" : JSON.stringify(reply.json));

/** Splits text into a few chunks for streaming (word boundaries kept, at most `parts`). */
export function chunks(text: string, parts = 3): string[] {
  if (text.length === 0) return [];
  const size = Math.max(1, Math.ceil(text.length / parts));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/** A `text/event-stream` response from events written by `write` (each `data` JSON-encoded unless a string). */
export function sse(write: (send: (data: unknown, event?: string) => void) => Promise<void> | void, headers: Record<string, string> = {}): Response {
  const encoder = new TextEncoder();
  const stream = new ReadableStream<Uint8Array>({
    async start(controller) {
      const send = (data: unknown, event?: string) => {
        const body = typeof data === "string" ? data : JSON.stringify(data);
        controller.enqueue(encoder.encode(`${event ? `event: ${event}\n` : ""}data: ${body}\n\n`));
      };
      try {
        await write(send);
      } finally {
        controller.close();
      }
    },
  });
  return new Response(stream, { headers: { "content-type": "text/event-stream", "cache-control": "no-cache", ...headers } });
}

/** Starts the server with the given API modules on a free loopback port. */
export function startFakeModelServer(apis: FakeApi[], options: { hostname?: string; port?: number } = {}): FakeModelServer {
  const script: FakeReply[] = [];
  const requests: LoggedRequest[] = [];
  const server = Bun.serve({
    hostname: options.hostname ?? "127.0.0.1",
    port: options.port ?? 0,
    idleTimeout: 0,
    async fetch(raw: Request): Promise<Response> {
      const url = new URL(raw.url);
      const api = apis.find((a) => a.routes(raw.method, url.pathname));
      const text = raw.method === "GET" || raw.method === "HEAD" ? "" : await raw.text();
      let body: unknown = text;
      try {
        body = text === "" ? undefined : JSON.parse(text);
      } catch {
        // not JSON: kept as text
      }
      const described = api?.describe?.(body, url.pathname, url) ?? {};
      const request: LoggedRequest = {
        api: api?.name ?? "unrouted",
        method: raw.method,
        path: url.pathname + url.search,
        headers: Object.fromEntries(raw.headers.entries()),
        body,
        ...(described.model !== undefined ? { model: described.model } : {}),
        ...(described.stream !== undefined ? { stream: described.stream } : {}),
        scripted: false,
      };
      requests.push(request);
      if (!api) return Response.json({ error: { message: `fake model server: no API serves ${raw.method} ${url.pathname}` } }, { status: 404 });
      const modelTurn = described.modelTurn ?? true;
      const take = (predicate?: (reply: FakeReply) => boolean) => {
        if (!modelTurn) return undefined;
        const index = script.findIndex((reply) => (reply.match ? reply.match(request) : true) && (predicate ? predicate(reply) : true));
        if (index < 0) return undefined;
        request.scripted = true;
        return script.splice(index, 1)[0];
      };
      return api.handle({ request, take });
    },
  });
  const port = server.port!;
  return {
    url: `http://${options.hostname ?? "127.0.0.1"}:${port}`,
    port,
    script: (...replies) => void script.push(...replies),
    requests,
    pending: () => script.length,
    stop: () => server.stop(true),
  };
}
