import { SmithersError } from "../errors/index.ts";
import type { Agent, AgentGenerateArgs, AgentReply } from "./types.ts";

export type ScriptedReply = string | Error | Record<string, unknown> | unknown[];
export type ScriptFunction = (args: AgentGenerateArgs, callIndex: number) => unknown;

export interface ScriptedAgent extends Agent {
  readonly calls: AgentGenerateArgs[];
  generate(args: AgentGenerateArgs): Promise<AgentReply>;
}

function wait(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function toReply(value: unknown): AgentReply {
  if (value instanceof Error) throw value;
  if (typeof value === "string") return { text: value };
  return { text: JSON.stringify(value) ?? "" };
}

/**
 * An agent that replies from a script, for examples and tests. A list is consumed in order
 * (a string is the reply text, an Error is thrown, an object or array is replied as JSON text);
 * a function gets the call and its 0-based index. Every call is recorded in `calls`.
 *
 * @example
 * const agent = scriptedAgent(["not json", { approved: true }], { id: "reviewer" });
 * await agent.generate({ prompt: "Review" }); // { text: "not json" }
 * agent.calls.length; // 1
 */
export function scriptedAgent(script: ReadonlyArray<ScriptedReply> | ScriptFunction, options: { id?: string; delayMs?: number } = {}): ScriptedAgent {
  const id = options.id ?? "scripted";
  const calls: AgentGenerateArgs[] = [];
  return {
    id,
    calls,
    async generate(args) {
      const callIndex = calls.length;
      calls.push({ ...args });
      const signal = args.abortSignal;
      if (options.delayMs !== undefined && options.delayMs > 0) await wait(options.delayMs, signal);
      if (signal?.aborted) throw signal.reason;
      if (typeof script === "function") return toReply(await script(args, callIndex));
      if (callIndex >= script.length) {
        throw new SmithersError(
          "AGENT_FAILED",
          `scriptedAgent "${id}" has no reply left for call ${callIndex + 1}: its script holds ${script.length} replies`,
          { agentId: id, callIndex },
        );
      }
      return toReply(script[callIndex]);
    },
  };
}
