import type { z } from "zod";

export interface AgentGenerateArgs {
  prompt: string;
  signal?: AbortSignal;
  /** The expected output schema, for agents that can produce structured output natively. */
  schema?: z.ZodType;
  /**
   * The working directory the work belongs in (absolute): the task's `<Worktree>`, else the run's
   * root directory. An agent that runs tools or a CLI runs them here, unless it was given its own.
   */
  cwd?: string;
}

export interface AgentReply {
  text: string;
  /** An already-structured value, when the agent has one; it is validated instead of parsing `text`. */
  output?: unknown;
}

/**
 * Anything that turns a prompt into a reply. Adapters for real providers implement this.
 *
 * @example
 * const echo: Agent = { id: "echo", generate: async ({ prompt }) => ({ text: prompt }) };
 */
export interface Agent {
  id?: string;
  generate(args: AgentGenerateArgs): Promise<AgentReply>;
}

/** One call made by generateStructured; `error` is JSON-safe (`{ message, code? }`). */
export type StructuredAttempt = {
  agentIndex: number;
  agentId?: string;
  /** 1-based call number for this agent. */
  try: number;
  prompt: string;
  text?: string;
  error?: unknown;
};
