/**
 * The Gemini API (generativelanguage.googleapis.com) for the fake model server:
 * `POST /v1beta/models/{model}:generateContent`, `:streamGenerateContent` (server-sent events with
 * `alt=sse`, else one JSON array), `:countTokens`, and the model list. Errors are shaped like
 * Google's: `{ error: { code, message, status } }`. Gemini CLI is pointed at it with
 * `GOOGLE_GEMINI_BASE_URL`.
 */
import { chunks, type FakeApi, type FakeReply, type FakeUsage, replyText, sleep, sse } from "./core.ts";

const PATH = /^\/(v1|v1beta|v1alpha)\/models(?:\/([^/:]+))?(?::(\w+))?$/;

/** Google's status names of the HTTP codes a test scripts. */
const STATUS_NAMES: Record<number, string> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  429: "RESOURCE_EXHAUSTED",
  500: "INTERNAL",
  503: "UNAVAILABLE",
};

/** The default usage of a reply: counts that look like a small turn. */
const DEFAULT_USAGE: FakeUsage = { inputTokens: 100, outputTokens: 20 };

type Part = Record<string, unknown>;

function parse(path: string): { model?: string; method?: string } | undefined {
  const m = PATH.exec(path);
  return m ? { model: m[2] === undefined ? undefined : decodeURIComponent(m[2]), method: m[3] } : undefined;
}

/** Whether the request's last content holds a functionResponse (a tool result being sent back). */
export function geminiToolResults(body: unknown): Part[] {
  const contents = (body as { contents?: { parts?: Part[] }[] } | undefined)?.contents ?? [];
  return contents.flatMap((c) => (c.parts ?? []).filter((p) => p.functionResponse !== undefined).map((p) => p.functionResponse as Part));
}

/** The names of the function declarations a request offers the model. */
export function geminiToolNames(body: unknown): string[] {
  const tools = (body as { tools?: { functionDeclarations?: { name: string }[] }[] } | undefined)?.tools ?? [];
  return tools.flatMap((t) => (t.functionDeclarations ?? []).map((d) => d.name));
}

function usageMetadata(usage: FakeUsage) {
  const thoughts = usage.reasoningTokens ?? 0;
  return {
    promptTokenCount: usage.inputTokens,
    candidatesTokenCount: usage.outputTokens,
    totalTokenCount: usage.inputTokens + usage.outputTokens + thoughts,
    ...(usage.cachedInputTokens !== undefined ? { cachedContentTokenCount: usage.cachedInputTokens } : {}),
    ...(thoughts > 0 ? { thoughtsTokenCount: thoughts } : {}),
  };
}

function errorResponse(reply: NonNullable<FakeReply["error"]>): Response {
  const status = STATUS_NAMES[reply.status] ?? "UNKNOWN";
  const message = reply.message ?? `fake model server: scripted HTTP ${reply.status}`;
  // Google says how long to wait in a RetryInfo detail ("7s"); a scripted retry-after header becomes one.
  const retryAfter = Object.entries(reply.headers ?? {}).find(([name]) => name.toLowerCase() === "retry-after")?.[1];
  const details = retryAfter === undefined ? [] : [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: `${retryAfter}s` }];
  return Response.json(
    { error: { code: reply.status, message, status: reply.type ?? status, ...(details.length > 0 ? { details } : {}) } },
    { status: reply.status, headers: reply.headers },
  );
}

/** The parts of a reply's answer: text, then one functionCall per tool call. */
function answerParts(reply: FakeReply): { text: string; calls: Part[] } {
  const calls = (reply.toolCalls ?? []).map((call, i) => ({ functionCall: { name: call.name, args: call.input, id: call.id ?? `call-${i + 1}` } }));
  return { text: replyText(reply), calls };
}

/**
 * A value that fits a response schema (Gemini's OBJECT/STRING… types or JSON Schema's): the first
 * enum value, required properties, "ok", 1, false, an empty list.
 */
export function exampleOf(schema: unknown): unknown {
  if (typeof schema !== "object" || schema === null) return null;
  const s = schema as { type?: unknown; enum?: unknown[]; properties?: Record<string, unknown>; required?: string[]; anyOf?: unknown[] };
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  if (Array.isArray(s.anyOf) && s.anyOf.length > 0) return exampleOf(s.anyOf[0]);
  const types = (Array.isArray(s.type) ? s.type : [s.type]).map((t) => String(t).toLowerCase()).filter((t) => t !== "null");
  switch (types[0]) {
    case "object": {
      const keys = s.required ?? Object.keys(s.properties ?? {});
      return Object.fromEntries(keys.map((key) => [key, exampleOf(s.properties?.[key])]));
    }
    case "array":
      return [];
    case "string":
      return "ok";
    case "integer":
    case "number":
      return 1;
    case "boolean":
      return false;
    default:
      return null;
  }
}

type GenerateBody = {
  tools?: { functionDeclarations?: unknown[] }[];
  generationConfig?: { responseJsonSchema?: unknown; responseSchema?: unknown };
};

/** The schema a request constrains its answer to, when it asks for JSON. */
function responseSchema(body: unknown): unknown {
  const config = (body as GenerateBody | undefined)?.generationConfig;
  return config?.responseJsonSchema ?? config?.responseSchema;
}

/**
 * Whether a request is a model turn a test scripts: one that offers tools, or asks for free text.
 * A JSON-schema call without tools is a client's side call (Gemini CLI's model router, its loop
 * and next-speaker checks) and gets a value fitting its schema instead.
 */
function isModelTurn(body: unknown): boolean {
  const offersTools = ((body as GenerateBody | undefined)?.tools ?? []).some((t) => (t.functionDeclarations?.length ?? 0) > 0);
  return offersTools || responseSchema(body) === undefined;
}

/** A turn no test scripted (a side call, or a script run dry): its schema's example, else "ok". */
function defaultReply(body: unknown): FakeReply {
  const schema = responseSchema(body);
  return schema === undefined ? { text: "ok" } : { json: exampleOf(schema), usage: { inputTokens: 50, outputTokens: 10 } };
}

let responseSeq = 0;

function candidateChunk(parts: Part[], model: string, finish: boolean, usage: FakeUsage | undefined, responseId: string) {
  return {
    candidates: [{ content: { role: "model", parts }, index: 0, ...(finish ? { finishReason: "STOP" } : {}) }],
    ...(usage ? { usageMetadata: usageMetadata(usage) } : {}),
    modelVersion: model,
    responseId,
  };
}

export const geminiApi: FakeApi = {
  name: "gemini",
  routes: (_method, path) => parse(path) !== undefined,
  describe: (body, path) => {
    const p = parse(path);
    const turn = p?.method === "generateContent" || p?.method === "streamGenerateContent";
    return { model: p?.model, stream: p?.method === "streamGenerateContent" ? true : turn ? false : undefined, modelTurn: turn && isModelTurn(body) };
  },
  async handle({ request, take }) {
    const url = new URL(`http://x${request.path}`);
    const p = parse(url.pathname)!;
    if (request.method === "GET") {
      if (p.model === undefined) {
        const names = ["gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite"];
        return Response.json({ models: names.map((name) => ({ name: `models/${name}`, supportedGenerationMethods: ["generateContent", "countTokens"] })) });
      }
      return Response.json({ name: `models/${p.model}`, supportedGenerationMethods: ["generateContent", "countTokens"] });
    }
    if (p.method === "countTokens") {
      return Response.json({ totalTokens: Math.ceil(JSON.stringify(request.body ?? "").length / 4) });
    }
    if (p.method !== "generateContent" && p.method !== "streamGenerateContent") {
      return errorResponse({ status: 404, message: `fake model server: no method ${p.method ?? "(none)"} on models/${p.model ?? ""}` });
    }
    const reply = take() ?? defaultReply(request.body);
    await sleep(reply.delayMs);
    if (reply.error) return errorResponse(reply.error);
    const model = reply.model ?? p.model ?? "gemini-2.5-pro";
    const usage = reply.usage ?? DEFAULT_USAGE;
    const { text, calls } = answerParts(reply);
    const responseId = `fake-response-${++responseSeq}`;
    if (p.method === "generateContent") {
      return Response.json(candidateChunk([...(text === "" ? [] : [{ text }]), ...calls], model, true, usage, responseId));
    }
    // Streamed: text in a few chunks, the function calls and the usage with the last one.
    const pieces = chunks(text);
    const events: unknown[] = pieces.map((piece, i) => {
      const last = i === pieces.length - 1 && calls.length === 0;
      return candidateChunk([{ text: piece }], model, last, last ? usage : undefined, responseId);
    });
    if (calls.length > 0 || pieces.length === 0) events.push(candidateChunk(calls, model, true, usage, responseId));
    if (url.searchParams.get("alt") !== "sse") return Response.json(events);
    return sse(async (send) => {
      for (const [i, event] of events.entries()) {
        if (i > 0) await sleep(reply.chunkDelayMs);
        send(event);
      }
    });
  },
};
