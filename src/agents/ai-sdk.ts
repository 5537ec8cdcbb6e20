/**
 * Calling an AI SDK agent (`ToolLoopAgent`, or anything implementing the SDK's `Agent`). With a
 * listener it is streamed, so its text, tool calls and tool results reach `onEvent` as they
 * arrive; the reply is then the one `generate` gives (text, structured output, total usage, the
 * answering model), and a model error rejects the call with the error `generate` would throw.
 * A model that cannot stream is called with `generate` instead.
 * Smithers does not depend on `ai`: the SDK's objects are read by their documented shapes.
 */
import { normalizeUsage, addUsage } from "./usage.ts";
import type { Agent, AgentEvent, AgentGenerateArgs, AgentReply, AgentUsage } from "./types.ts";

/** One part of a StreamTextResult's `fullStream` (the fields read here). */
type StreamPart = { type: string } & Record<string, unknown>;

type StreamTextResultLike = {
  fullStream: AsyncIterable<StreamPart>;
  text: PromiseLike<string>;
  output: PromiseLike<unknown>;
  totalUsage: PromiseLike<unknown>;
  response: PromiseLike<{ modelId?: unknown }>;
};

type StreamingAgent = Agent & { stream(args: Record<string, unknown>): PromiseLike<StreamTextResultLike> | StreamTextResultLike };

/** Agents whose model refused to stream: they are called with `generate` from then on. */
const cannotStream = new WeakSet<object>();

/** An AI SDK agent (`ToolLoopAgent` or anything implementing its `Agent` interface). */
export function isAiSdkAgent(agent: Agent): boolean {
  return (agent as { version?: unknown }).version === "agent-v1";
}

/**
 * Calls an AI SDK agent, reporting what it does on `args.onEvent`: streamed when it has a
 * `stream` method and its model streams, else through `generate` with step callbacks (each step's
 * text as it ends, tools as they run).
 */
export async function callAiSdkAgent(agent: Agent, args: AgentGenerateArgs): Promise<AgentReply> {
  const onEvent = args.onEvent;
  if (!onEvent) return agent.generate(args);
  const streaming = agent as Partial<StreamingAgent>;
  if (typeof streaming.stream === "function" && !cannotStream.has(agent)) {
    const reply = await streamAgent(agent as StreamingAgent, args, onEvent);
    if (reply !== NOT_STREAMED) return reply;
    cannotStream.add(agent);
  }
  return generateWithSteps(agent, args, onEvent);
}

const NOT_STREAMED = Symbol("not streamed");

async function streamAgent(agent: StreamingAgent, args: AgentGenerateArgs, onEvent: (event: AgentEvent) => void): Promise<AgentReply | typeof NOT_STREAMED> {
  let failure: { error: unknown } | undefined;
  // A model error ends the stream here, after the parts before it: the call rejects with it, as
  // `generate` throws it, and the SDK's default stream `onError` does not print it besides.
  const experimental_transform = () =>
    new TransformStream<StreamPart, StreamPart>({
      transform(part, controller) {
        if (part.type !== "error") return controller.enqueue(part);
        failure ??= { error: part.error };
        controller.terminate();
      },
    });
  // Our own signal too, to stop the model (and further steps) once the call has failed.
  const stop = new AbortController();
  const abortSignal = args.abortSignal ? AbortSignal.any([args.abortSignal, stop.signal]) : stop.signal;
  const result = await agent.stream({ ...args, abortSignal, experimental_transform });
  let answered = false; // whether the model said anything yet (beyond the stream's and the step's start)
  let sofar: AgentUsage | undefined;
  try {
    for await (const part of result.fullStream) {
      if (part.type === "error") {
        failure ??= { error: part.error }; // an SDK version that ignored the transform
        break; // leaving the loop cancels the stream
      }
      if (part.type !== "start" && part.type !== "start-step") answered = true;
      if (part.type === "finish-step") {
        const response = part.response as { modelId?: unknown } | undefined;
        const used = normalizeUsage(part.usage, typeof response?.modelId === "string" ? response.modelId : undefined);
        // The usage so far, so a call stopped mid-loop still counts its finished steps.
        if (used) onEvent({ type: "usage", usage: (sofar = addUsage(sofar, used)!) });
      } else {
        const event = partEvent(part);
        if (event) onEvent(event);
      }
    }
  } catch (error) {
    failure ??= { error };
  }
  if (failure) {
    stop.abort(failure.error);
    // The model's first call failed before it answered, because it has no streaming: ask it again without.
    if (!answered && isStreamingUnsupported(failure.error)) return NOT_STREAMED;
    throw failure.error;
  }
  // After an abort the stream ends early and these reject with the abort's reason.
  const [text, totalUsage, response] = await Promise.all([result.text, result.totalUsage, result.response]);
  // Without structured output (or when none could be parsed) the text is parsed instead, as for `generate`.
  const output = await Promise.resolve(result.output).then(
    (value) => ({ value }),
    () => undefined,
  );
  return { text, ...(output ? { output: output.value } : {}), totalUsage, response: { modelId: response.modelId } } as AgentReply;
}

/**
 * A model that cannot stream: the SDK's `UnsupportedFunctionalityError`, or the "Not implemented"
 * of a mock model from `ai/test` built with `doGenerate` only.
 */
function isStreamingUnsupported(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  return error.name === "AI_UnsupportedFunctionalityError" || error.message === "Not implemented";
}

/** The event a stream part (or a tool's end, for `generate`) stands for, if any. */
function partEvent(part: StreamPart): AgentEvent | undefined {
  const toolName = typeof part.toolName === "string" ? part.toolName : undefined;
  const callId = typeof part.toolCallId === "string" ? { callId: part.toolCallId } : {};
  switch (part.type) {
    case "text-delta":
      return typeof part.text === "string" && part.text !== "" ? { type: "text", text: part.text } : undefined;
    case "tool-call":
      return toolName === undefined ? undefined : { type: "tool-call", toolName, ...callId, input: part.input };
    case "tool-result":
      // A preliminary result is a tool's progress; the final one follows.
      return part.preliminary === true ? undefined : { type: "tool-result", ...(toolName === undefined ? {} : { toolName }), ...callId, output: part.output };
    case "tool-error":
      return { type: "tool-result", ...(toolName === undefined ? {} : { toolName }), ...callId, output: errorText(part.error), isError: true };
    default:
      return undefined;
  }
}

function errorText(error: unknown): unknown {
  return error instanceof Error ? error.message : error;
}

/** `generate` with the step callbacks: each step's text as it ends, each tool as it starts and ends. */
function generateWithSteps(agent: Agent, args: AgentGenerateArgs, onEvent: (event: AgentEvent) => void): PromiseLike<AgentReply> {
  let sofar: AgentUsage | undefined;
  const onStepEnd = (step: { text?: unknown; usage?: unknown; response?: { modelId?: unknown } }) => {
    if (typeof step.text === "string" && step.text !== "") onEvent({ type: "text", text: step.text });
    const model = typeof step.response?.modelId === "string" ? step.response.modelId : undefined;
    const used = normalizeUsage(step.usage, model);
    if (used) onEvent({ type: "usage", usage: (sofar = addUsage(sofar, used)!) });
  };
  const onToolExecutionStart = ({ toolCall }: { toolCall?: StreamPart }) => {
    const event = toolCall && partEvent({ ...toolCall, type: "tool-call" });
    if (event) onEvent(event);
  };
  const onToolExecutionEnd = ({ toolOutput }: { toolOutput?: StreamPart }) => {
    const event = toolOutput && partEvent(toolOutput);
    if (event) onEvent(event);
  };
  return agent.generate({ ...args, onStepEnd, onToolExecutionStart, onToolExecutionEnd } as AgentGenerateArgs);
}
