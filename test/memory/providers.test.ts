/**
 * Memory with the real AI SDK provider packages (`@ai-sdk/openai`, `@ai-sdk/openai-compatible`)
 * pointed at the fake model server's `/v1/embeddings`: the providers' own request building and
 * response parsing run, nothing leaves the machine. An HTTP error from the provider is
 * MEMORY_EMBED_FAILED and writes nothing.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { createMemory, openSmithersDb } from "../../src/index.ts";
import { query, rejection, tempDbPath } from "../helpers.ts";
import { startFakeModelServer } from "../support/fake-model/core.ts";
import { openaiEmbeddings } from "../support/fake-model/openai-embeddings.ts";
import { hashEmbedding } from "../support/hash-embedder.ts";

const server = startFakeModelServer([openaiEmbeddings]);
afterAll(() => server.stop());

const DOCS = ["refunds are paid within five days", "the office cat is called Miso", "invoices are sent monthly by email"];

describe("memory over the fake server's embeddings endpoint", () => {
  test("@ai-sdk/openai: stores the endpoint's vectors and recalls by them", async () => {
    const path = tempDbPath();
    const db = openSmithersDb(path);
    const openai = createOpenAI({ baseURL: `${server.url}/v1`, apiKey: "sk-fake-embed" });
    const memory = createMemory({ db, embedder: openai.embedding("text-embedding-3-small"), namespace: "faq", dimensions: 384 });
    const before = server.requests.length;
    await memory.remember(DOCS);
    const hits = await memory.recall("which day are invoices sent", { k: 2 });
    expect(hits[0]?.content).toBe("invoices are sent monthly by email");
    const sent = server.requests.slice(before);
    expect(sent.map((r) => [r.path, r.model, (r.body as { input: string[] }).input])).toEqual([
      ["/v1/embeddings", "text-embedding-3-small", DOCS],
      ["/v1/embeddings", "text-embedding-3-small", ["which day are invoices sent"]],
    ]);
    const [row] = await query<{ embedding: Uint8Array }>(path, "SELECT embedding FROM _smithers_vectors WHERE content = $1", DOCS[1]!);
    expect(Array.from(new Float32Array(Uint8Array.from(row!.embedding).buffer))).toEqual(hashEmbedding(DOCS[1]!, 384));
    await db.close();
  });

  test("@ai-sdk/openai-compatible: an HTTP 500 is MEMORY_EMBED_FAILED and nothing is written", async () => {
    const path = tempDbPath();
    const db = openSmithersDb(path);
    const provider = createOpenAICompatible({ name: "fake", baseURL: `${server.url}/v1`, apiKey: "sk-fake-embed" });
    const memory = createMemory({ db, embedder: provider.embeddingModel("fake-embed"), maxRetries: 0 });
    server.script({ error: { status: 500, message: "embedding backend down" } });
    const error = await rejection(memory.remember(DOCS));
    expect([error.code, error.message]).toEqual(["MEMORY_EMBED_FAILED", expect.stringContaining("embedding backend down")]);
    expect(await query(path, "SELECT id FROM _smithers_vectors")).toEqual([]);
    await memory.remember(DOCS);
    expect((await memory.recall("the cat", { k: 1 }))[0]?.content).toBe("the office cat is called Miso");
    await db.close();
  });
});
