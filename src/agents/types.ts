import type { z } from "zod";

/** Token counts and cost of one agent call (or a sum of them). Absent fields are unknown, not zero. */
export type AgentUsage = {
  /** Input (prompt) tokens, cached ones included. */
  inputTokens?: number;
  /** Of `inputTokens`, those read from the provider's prompt cache. */
  cachedInputTokens?: number;
  outputTokens?: number;
  /** Cost in US dollars, when the agent reports it or a price for `model` is known. */
  costUsd?: number;
  /** The model that answered, when known (for pricing). */
  model?: string;
  /**
   * The tokens by model, when the call used more than one (a CLI's model router or helper calls
   * on a smaller model): each model's share is priced at its own price.
   */
  models?: Readonly<Record<string, ModelTokens>>;
};

/** The tokens one model used within a call. */
export type ModelTokens = { inputTokens?: number; cachedInputTokens?: number; outputTokens?: number };

/**
 * What an agent reports while it works (`onEvent`). CLI agents parse these from their stream, an
 * AI SDK agent's come from its `fullStream`; the engine forwards text, tool calls and tool results
 * as `NodeOutput` events and records the process for a later resume.
 */
export type AgentEvent =
  /** A piece of the reply text as it arrives. */
  | { type: "text"; text: string }
  /** The agent asked for a tool (executed by the agent itself, e.g. a CLI's `Bash`). */
  | { type: "tool-call"; toolName: string; callId?: string; input?: unknown }
  /** What a tool call returned (`output`), or its error when `isError`. */
  | { type: "tool-result"; toolName?: string; callId?: string; output?: unknown; isError?: boolean }
  /** Usage so far or at the end (a CLI's result line). */
  | { type: "usage"; usage: AgentUsage }
  /**
   * A subprocess started in its own process group (`pid` is also the group id). `startTime`:
   * the kernel's start time of that process (Linux /proc/<pid>/stat field 22) when readable, so
   * a later resume ends the group only if that very process is still there, not a reused pid.
   */
  | { type: "process"; pid: number; command: string; startTime?: string }
  /** The CLI's own session / thread id, for resuming it by hand. */
  | { type: "session"; sessionId: string };

/** A time limit for one call: milliseconds in all, or `{ totalMs, idleMs }` (idle: no output for that long). */
export type AgentTimeout = number | { totalMs?: number; idleMs?: number };

/**
 * What `generate` receives. The names follow the AI SDK's Agent interface (`abortSignal`,
 * `timeout`), so an AI SDK `ToolLoopAgent` is an agent as it is.
 */
export interface AgentGenerateArgs {
  prompt: string;
  /** Aborted on cancel, the task's `timeoutMs`, or the run failing: stop and reject. */
  abortSignal?: AbortSignal;
  /** The expected output schema, for agents that can produce structured output natively. */
  outputSchema?: z.ZodType;
  /** A limit for this call; a task's `timeoutMs` arrives as `abortSignal` instead. */
  timeout?: AgentTimeout;
  /** Raw output of a subprocess agent, as it arrives. */
  onStdout?: (chunk: string) => void;
  onStderr?: (chunk: string) => void;
  onEvent?: (event: AgentEvent) => void;
  /**
   * The working directory the work belongs in (absolute): the task's `<Worktree>`, else the run's
   * root directory. An agent that runs tools or a CLI runs them here, unless it was given its own.
   */
  cwd?: string;
  /** The W3C trace context of the attempt making the call, when tracing is on; CLI agents pass it on as TRACEPARENT. */
  traceparent?: string;
  /**
   * Set by the engine for a task under `<Sandbox>` / `sandbox`: the agent runs its subprocess
   * through it. Only agents with `sandboxable: true` (the CLI agents) are given one.
   */
  sandbox?: ProcessSandbox;
}

/**
 * A sandbox a subprocess agent starts its process in (the engine's bubblewrap session of the
 * attempt). The agent hands over its command and the whole environment the process gets.
 */
export interface ProcessSandbox {
  /** The process's working directory: fresh and writable, the only place it may write (unless the policy allows the run's root). */
  readonly cwd: string;
  /** HOME inside: writable, fresh (the CLI's own state and caches go there). */
  readonly home: string;
  /** A directory for the agent's per-call files (settings, schemas) that the process can read. */
  readonly scratchDir: string;
  /** The command line that runs `argv` inside, with `env` as its entire environment. */
  command(argv: readonly string[], env: Readonly<Record<string, string>>): string[];
  /** Told the sandbox's process id once it started. */
  started(pid: number): void;
  /** Told how the process ended (null: killed by a signal or never started). */
  ended(exitCode: number | null): void;
  /** The error a failed call throws: the agent's own, or one that names the sandbox as the cause. */
  explain(error: unknown): unknown;
}

export interface AgentReply {
  text: string;
  /** An already-structured value, when the agent has one; it is validated instead of parsing `text`. */
  output?: unknown;
  /**
   * Usage of the call: an AgentUsage, or an AI SDK result's `usage` / `totalUsage`
   * (`inputTokens`, `inputTokenDetails.cacheReadTokens`, `outputTokens`), read either way.
   */
  usage?: unknown;
}

/**
 * Anything that turns a prompt into a reply. Adapters for real providers implement this.
 *
 * @example
 * const echo: Agent = { id: "echo", generate: async ({ prompt }) => ({ text: prompt }) };
 */
export interface Agent {
  id?: string;
  /** True for an agent whose work runs in a subprocess that `AgentGenerateArgs.sandbox` can hold (the CLI agents); others cannot be sandboxed. */
  readonly sandboxable?: boolean;
  generate(args: AgentGenerateArgs): PromiseLike<AgentReply>;
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
  usage?: AgentUsage;
};
