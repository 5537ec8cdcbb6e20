/**
 * An `ai/test` mock model that streams scripted steps piece by piece, for tests of live agent
 * output: each step is a list of text deltas, tool calls, provider errors and gates (a promise the
 * stream waits for, so a test can look at what arrived while the model is paused mid-answer).
 */
import type { LanguageModelV4StreamPart } from "@ai-sdk/provider";
import { MockLanguageModelV4 } from "ai/test";

/** One piece of a step: a text delta, a tool call, an error chunk from the provider, or a gate to wait for. */
export type StreamPiece = string | { tool: string; input: unknown; id?: string } | { error: unknown } | Promise<unknown>;

export type StreamStep = { pieces: StreamPiece[]; usage?: { input: number; output: number } };

export type StreamingModel = {
  model: MockLanguageModelV4;
  /** How many times the model was asked to stream. */
  calls(): number;
  /** Whether a stream was cancelled (the caller stopped reading it) or its call aborted. */
  stopped(): boolean;
};

/** A model whose n-th stream call plays `steps[n]` (the last one again once they run out), answering as `modelId`. */
export function streamingModel(steps: StreamStep[], o: { modelId?: string; servedModelId?: string } = {}): StreamingModel {
  let stopped = false;
  const model = new MockLanguageModelV4({
    modelId: o.modelId ?? "mock-model",
    doStream: async ({ abortSignal }) => {
      abortSignal?.addEventListener("abort", () => (stopped = true), { once: true });
      const step = steps[Math.min(model.doStreamCalls.length - 1, steps.length - 1)]!;
      const parts = play(step, o.servedModelId);
      return {
        stream: new ReadableStream<LanguageModelV4StreamPart>({
          async pull(controller) {
            const next = await parts.next();
            if (next.done) controller.close();
            else controller.enqueue(next.value);
          },
          cancel() {
            stopped = true;
          },
        }),
      };
    },
  });
  return { model, calls: () => model.doStreamCalls.length, stopped: () => stopped };
}

async function* play(step: StreamStep, servedModelId: string | undefined): AsyncGenerator<LanguageModelV4StreamPart> {
  yield { type: "stream-start", warnings: [] };
  if (servedModelId !== undefined) yield { type: "response-metadata", modelId: servedModelId };
  let textOpen = false;
  let toolCalls = 0;
  for (const piece of step.pieces) {
    if (piece instanceof Promise) {
      await piece;
    } else if (typeof piece === "string") {
      if (!textOpen) yield { type: "text-start", id: "text" };
      textOpen = true;
      yield { type: "text-delta", id: "text", delta: piece };
    } else if ("error" in piece) {
      yield { type: "error", error: piece.error };
    } else {
      if (textOpen) yield { type: "text-end", id: "text" };
      textOpen = false;
      toolCalls++;
      yield { type: "tool-call", toolCallId: piece.id ?? `call-${toolCalls}`, toolName: piece.tool, input: JSON.stringify(piece.input) };
    }
  }
  if (textOpen) yield { type: "text-end", id: "text" };
  const { input, output } = step.usage ?? { input: 100, output: 20 };
  yield {
    type: "finish",
    finishReason: toolCalls > 0 ? { unified: "tool-calls", raw: "tool_use" } : { unified: "stop", raw: "stop" },
    usage: { inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: output, text: output, reasoning: 0 } },
  };
}

/** A promise and the function that settles it: a gate a streaming model waits at until the test opens it. */
export function gate(): { wait: Promise<void>; open: () => void } {
  const { promise, resolve } = Promise.withResolvers<void>();
  return { wait: promise, open: () => resolve() };
}
