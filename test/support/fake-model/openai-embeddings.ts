/**
 * The fake server's OpenAI Embeddings API (`POST /v1/embeddings`), as `@ai-sdk/openai`'s and
 * `@ai-sdk/openai-compatible`'s embedding models call it. Each input is embedded by the
 * deterministic hashEmbedding (`dimensions` from the request, else 384); a scripted reply with
 * `error` answers that HTTP error instead.
 */
import { hashEmbedding } from "../hash-embedder.ts";
import { type FakeApi, sleep } from "./core.ts";
import { errorResponse } from "./openai-chat.ts";

type EmbeddingsBody = { model?: string; input?: string | string[]; dimensions?: number; encoding_format?: string };

export const openaiEmbeddings: FakeApi = {
  name: "openai-embeddings",
  routes: (method, path) => method === "POST" && /\/embeddings$/.test(path),
  describe: (body) => ({ model: (body as EmbeddingsBody | undefined)?.model, stream: false }),
  async handle({ request, take }) {
    const body = (request.body ?? {}) as EmbeddingsBody;
    const reply = take();
    await sleep(reply?.delayMs);
    if (reply?.error) return errorResponse(reply.error);
    const inputs = typeof body.input === "string" ? [body.input] : (body.input ?? []);
    const data = inputs.map((text, index) => ({ object: "embedding", index, embedding: hashEmbedding(text, body.dimensions ?? 384) }));
    const tokens = inputs.reduce((n, t) => n + t.split(/\s+/).length, 0);
    return Response.json({ object: "list", data, model: body.model ?? "fake-embedding", usage: { prompt_tokens: tokens, total_tokens: tokens } });
  },
};
