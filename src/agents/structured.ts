import type { z } from "zod";
import { SmithersError, type SmithersErrorCode } from "../errors/index.ts";
import { formatIssuePath, formatZodIssues } from "../schema/index.ts";
import { describeSchema } from "../schema/index.ts";
import { callAiSdkAgent, isAiSdkAgent } from "./ai-sdk.ts";
import { extractJson } from "./extract-json.ts";
import { retryAfter } from "./retry-after.ts";
import type { Agent, AgentEvent, AgentGenerateArgs, AgentReply, AgentUsage, ProcessSandbox, StructuredAttempt } from "./types.ts";
import { addUsage, normalizeUsage, priceUsage, type ModelPricing } from "./usage.ts";

/** Correction calls per agent after a reply that fails the schema, unless the caller says (a Task's `maxSchemaRetries`). */
const DEFAULT_MAX_SCHEMA_RETRIES = 3;
const PREVIOUS_REPLY_CHARS = 2000;

/**
 * The prompt followed by instructions to reply with JSON matching `schema`.
 *
 * @example
 * buildPrompt("Review this diff.", z.object({ approved: z.boolean() }));
 */
export function buildPrompt(prompt: string, schema: z.ZodType): string {
  const described = describeSchema(schema);
  // A prompt that already holds the description (an .mdx prompt's {props.schema}) does not get it twice.
  return [
    prompt,
    "## Output format",
    "Reply with JSON only, no prose before or after it (a single ```json fenced block is also accepted).",
    ...(prompt.includes(described) ? [] : [described]),
  ].join("\n\n");
}

function retrySection(problem: string, previousText: string | undefined): string {
  const lines = ["## Your previous reply was not accepted", problem];
  if (previousText !== undefined && previousText.trim() !== "") {
    const shown = previousText.length > PREVIOUS_REPLY_CHARS ? `${previousText.slice(0, PREVIOUS_REPLY_CHARS)}…` : previousText;
    lines.push(`Your previous reply was:\n<<<\n${shown}\n>>>`);
  }
  lines.push("Reply again with a corrected JSON value that matches the schema above.");
  return `\n\n${lines.join("\n\n")}`;
}

function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function errorSummary(error: unknown): { message: string; code?: string } {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === "string" ? { message: error.message, code } : { message: error.message };
  }
  return { message: typeof error === "string" ? error : jsonText(error) };
}

/** Settles like `promise`, or rejects with the abort reason as soon as `signal` aborts. */
function raceAbort<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
    if (signal.aborted) onAbort();
  });
}

function callAgent(agent: Agent, args: AgentGenerateArgs): Promise<AgentReply> {
  try {
    // An AI SDK agent reports its text, tool calls and results and usage as they come.
    return Promise.resolve(isAiSdkAgent(agent) ? callAiSdkAgent(agent, args) : agent.generate(args));
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * The reply's structured value, if it has one. An AI SDK result's `output` throws when none was
 * generated, and is the text itself for an agent without an output specification: neither is
 * structured output, so the text is parsed instead.
 */
function structuredOutput(reply: AgentReply, text: string): unknown {
  let output: unknown;
  try {
    output = reply.output;
  } catch {
    return undefined;
  }
  return typeof output === "string" && output === text ? undefined : output;
}

/** The usage a reply reports: an AI SDK result's `totalUsage` (every step) over `usage` (AgentUsage or the last step). */
function replyUsage(reply: AgentReply, pricing: ModelPricing | undefined): AgentUsage | undefined {
  const r = reply as AgentReply & { totalUsage?: unknown; response?: { modelId?: unknown } };
  let raw: unknown;
  let model: string | undefined;
  try {
    raw = r.totalUsage ?? r.usage;
    model = typeof r.response?.modelId === "string" ? r.response.modelId : undefined;
  } catch {
    return undefined;
  }
  return priceUsage(normalizeUsage(raw, model), pricing);
}

/** An HTTP status and headers an AI SDK provider error carries (APICallError, or the last one a RetryError gave up on). */
function httpFailureOf(error: unknown): { status: number; headers: Record<string, string> } | undefined {
  const e = error as { statusCode?: unknown; responseHeaders?: unknown; lastError?: unknown; reason?: unknown } | null;
  if (e === null || typeof e !== "object") return undefined;
  if (typeof e.statusCode === "number") {
    const headers = typeof e.responseHeaders === "object" && e.responseHeaders !== null ? (e.responseHeaders as Record<string, string>) : {};
    return { status: e.statusCode, headers };
  }
  return e.lastError !== undefined && e.lastError !== error ? httpFailureOf(e.lastError) : undefined;
}

/**
 * The code of a provider's HTTP failure, as the CLI agents classify theirs: 401/403 refused
 * credentials, 404 an unknown model, 429 a rate limit (with the delay its headers ask for).
 */
export function providerFailure(
  error: unknown,
): { code: "AGENT_AUTH_FAILED" | "AGENT_MODEL_NOT_FOUND" | "AGENT_RATE_LIMITED"; retryAfterMs?: number } | undefined {
  const http = httpFailureOf(error);
  if (!http) return undefined;
  if (http.status === 401 || http.status === 403) return { code: "AGENT_AUTH_FAILED" };
  if (http.status === 404) return { code: "AGENT_MODEL_NOT_FOUND" };
  if (http.status !== 429) return undefined;
  const retryAfterMs = retryAfter(http.headers);
  return retryAfterMs === undefined ? { code: "AGENT_RATE_LIMITED" } : { code: "AGENT_RATE_LIMITED", retryAfterMs };
}

/**
 * Fails SANDBOX_POLICY_UNSUPPORTED when an agent of the list cannot run sandboxed (an AI SDK
 * agent works inside this process): a sandbox is never dropped silently.
 */
export function refuseUnsandboxable(agents: readonly Agent[], where: string): void {
  const refused = agents.flatMap((agent, i) => (agent.sandboxable === true ? [] : [agent.id ?? `#${i + 1}`]));
  if (refused.length === 0) return;
  throw new SmithersError(
    "SANDBOX_POLICY_UNSUPPORTED",
    `${where} has a sandbox, but agent ${refused.join(", ")} runs inside this process and cannot be sandboxed (only the CLI agents can: ClaudeCodeAgent, CodexAgent, GeminiAgent, OpenCodeAgent)`,
    { where, agents: refused },
  );
}

export type GenerateStructuredOptions<S extends z.ZodType> = {
  agent: Agent | readonly Agent[];
  prompt: string;
  schema: S;
  signal?: AbortSignal;
  /**
   * Correction calls per agent after an unparseable or invalid reply, each quoting what was wrong
   * (a whole number >= 0; default 3, 0: none).
   */
  maxSchemaRetries?: number;
  /** Passed to every generate call as its `cwd` (see AgentGenerateArgs). */
  cwd?: string;
  /** Passed to every generate call as its `traceparent` (see AgentGenerateArgs). */
  traceparent?: string;
  /** Passed to every generate call as its `sandbox`: every agent of the list must be `sandboxable` (SANDBOX_POLICY_UNSUPPORTED). */
  sandbox?: ProcessSandbox;
  onAttempt?: (attempt: StructuredAttempt) => void;
  /** Told when the attempt moves from one agent of the list to the next, and with what code the one before failed. */
  onFallback?: (fallback: AgentFallback) => void;
  /**
   * Told of every agent call as it starts. On abort the result rejects at once, but an agent that
   * ignores its signal keeps running; a caller that must not start another call beside it (the
   * engine's retry) waits for these.
   */
  onCall?: (call: Promise<unknown>) => void;
  /** Passed to every generate call (see AgentGenerateArgs); an AI SDK agent's streamed text, tool calls and results arrive here too. */
  onEvent?: (event: AgentEvent) => void;
  onStdout?: (chunk: string) => void;
  onStderr?: (chunk: string) => void;
  /** Prices used to fill `costUsd` for replies that report tokens but no cost. */
  pricing?: ModelPricing;
};

/** Moving from agent `fromIndex` to agent `toIndex` (ids when the agents have them), after `code`. */
export type AgentFallback = { fromIndex: number; toIndex: number; fromAgent: string | null; toAgent: string | null; code: string };

/** How an agent's turn ended: the code the engine reads, and a rate limit's delay. */
type Ending = { code: SmithersErrorCode; retryAfterMs?: number };

/** The code (and a rate limit's delay) a thrown failure stands for, as the engine will read it. */
function failureOf(error: unknown): Ending {
  if (SmithersError.is(error)) {
    const asked = error.details.retryAfterMs;
    return typeof asked === "number" ? { code: error.code, retryAfterMs: asked } : { code: error.code };
  }
  return providerFailure(error) ?? { code: "AGENT_FAILED" };
}

export type GenerateStructuredResult<S extends z.ZodType> = {
  value: z.infer<S>;
  text: string;
  agentIndex: number;
  attempts: StructuredAttempt[];
  /** What every call together consumed (retries and fallbacks included), when any reported it. */
  usage?: AgentUsage;
};

/**
 * Asks the agents in order for output matching `schema`. Each agent gets up to
 * 1 + `maxSchemaRetries` calls, every retry quoting what was wrong with the previous reply; an
 * agent whose `generate` throws hands over to the next one at once. Rejects with the signal's
 * reason on abort, else with SmithersError `INVALID_OUTPUT` (or, when the last failure was a
 * thrown error, that error's code if it was a SmithersError, else `AGENT_FAILED`) carrying
 * `details.attempts`.
 *
 * @example
 * const { value } = await generateStructured({
 *   agent: [primary, fallback],
 *   prompt: "Review this diff.",
 *   schema: z.object({ approved: z.boolean() }),
 * });
 */
export async function generateStructured<S extends z.ZodType>(opts: GenerateStructuredOptions<S>): Promise<GenerateStructuredResult<S>> {
  const { schema, signal, onAttempt } = opts;
  const agents: readonly Agent[] = Array.isArray(opts.agent) ? opts.agent : [opts.agent as Agent];
  if (agents.length === 0) throw new SmithersError("INVALID_WORKFLOW", "generateStructured needs at least one agent");
  if (opts.sandbox) refuseUnsandboxable(agents, "generateStructured");
  const retries = opts.maxSchemaRetries ?? DEFAULT_MAX_SCHEMA_RETRIES;
  if (!(Number.isSafeInteger(retries) && retries >= 0)) {
    throw new SmithersError("INVALID_OPTION", `maxSchemaRetries must be a whole number >= 0, got ${String(retries)}`);
  }
  const basePrompt = buildPrompt(opts.prompt, schema);
  const attempts: StructuredAttempt[] = [];
  let usage: AgentUsage | undefined;
  const passed: Partial<AgentGenerateArgs> = {
    ...(signal ? { abortSignal: signal } : {}),
    ...(opts.cwd === undefined ? {} : { cwd: opts.cwd }),
    ...(opts.traceparent === undefined ? {} : { traceparent: opts.traceparent }),
    ...(opts.sandbox === undefined ? {} : { sandbox: opts.sandbox }),
    ...(opts.onEvent ? { onEvent: opts.onEvent } : {}),
    ...(opts.onStdout ? { onStdout: opts.onStdout } : {}),
    ...(opts.onStderr ? { onStderr: opts.onStderr } : {}),
  };
  let lastError: unknown;

  const record = (attempt: StructuredAttempt) => {
    attempts.push(attempt);
    onAttempt?.(attempt);
  };

  // How each agent's turn ended when it failed: what the fallback event says, and whether all were rate-limited.
  const endings: Ending[] = [];
  for (const [agentIndex, agent] of agents.entries()) {
    if (agentIndex > 0) {
      const from = agents[agentIndex - 1]!;
      opts.onFallback?.({
        fromIndex: agentIndex - 1,
        toIndex: agentIndex,
        fromAgent: from.id ?? null,
        toAgent: agent.id ?? null,
        code: endings[agentIndex - 1]!.code,
      });
    }
    endings.push({ code: "INVALID_OUTPUT" });
    let feedback = "";
    for (let tryNumber = 1; tryNumber <= 1 + retries; tryNumber++) {
      if (signal?.aborted) throw signal.reason;
      const prompt = basePrompt + feedback;
      const base = { agentIndex, ...(agent.id === undefined ? {} : { agentId: agent.id }), try: tryNumber, prompt };

      let reply: AgentReply;
      try {
        const call = callAgent(agent, { ...passed, prompt, outputSchema: schema });
        opts.onCall?.(call);
        reply = await raceAbort(call, signal);
        if (typeof reply !== "object" || reply === null) {
          throw new SmithersError("AGENT_FAILED", `Agent returned ${reply === null ? "null" : typeof reply} instead of { text }`);
        }
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        // A CLI that failed after working (a crash, a timeout) may still say what it consumed.
        // (a SmithersError's details.usage; an AI SDK error such as NoObjectGeneratedError has .usage)
        const failed = error as { usage?: unknown; details?: { usage?: unknown } } | null;
        const spent = priceUsage(normalizeUsage(failed?.details?.usage ?? failed?.usage), opts.pricing);
        usage = addUsage(usage, spent);
        record({ ...base, ...(spent ? { usage: spent } : {}), error: errorSummary(error) });
        lastError = error;
        endings[agentIndex] = failureOf(error);
        break;
      }

      let text = "";
      try {
        text = typeof reply.text === "string" ? reply.text : "";
      } catch {
        // an AI SDK result without steps throws here: no text
      }
      const callUsage = replyUsage(reply, opts.pricing);
      usage = addUsage(usage, callUsage);
      const withUsage = callUsage ? { usage: callUsage } : {};
      const output = structuredOutput(reply, text);
      let candidate: unknown;
      try {
        candidate = output !== undefined ? output : extractJson(text);
      } catch (error) {
        record({ ...base, text, ...withUsage, error: errorSummary(error) });
        lastError = error;
        feedback = retrySection("It contained no parseable JSON.", text);
        continue;
      }

      const parsed = await schema.safeParseAsync(candidate);
      if (parsed.success) {
        record({ ...base, text, ...withUsage });
        return { value: parsed.data, text, agentIndex, attempts, ...(usage ? { usage } : {}) };
      }
      const problems = formatZodIssues(parsed.error.issues);
      const error = new SmithersError("INVALID_OUTPUT", `Reply does not match the schema:\n${problems}`, {
        issues: parsed.error.issues.map((issue) => ({ path: formatIssuePath(issue.path), message: issue.message })),
      });
      record({ ...base, text, ...withUsage, error: errorSummary(error) });
      lastError = error;
      const shownReply = output !== undefined ? jsonText(output) : text;
      feedback = retrySection(`It did not match the schema:\n${problems}`, shownReply);
    }
  }

  const last = errorSummary(lastError);
  // The prompt is the caller's and can be large: the error names its length, never repeats it.
  const tried = attempts.map(({ prompt, ...rest }) => ({ ...rest, promptChars: prompt.length }));
  // The code the engine decides retries on is the last agent's ending: a thrown SmithersError's
  // (AGENT_AUTH_FAILED, AGENT_TIMEOUT, …), a provider's HTTP failure mapped the same way, or
  // INVALID_OUTPUT after replies that never matched. When every agent of a fallback list was
  // rate-limited, the soonest delay any of them named, and `everyAgent` (the engine then waits).
  const ending = endings.at(-1)!;
  const everyAgent = agents.length > 1 && endings.every((e) => e.code === "AGENT_RATE_LIMITED");
  const delays = endings.flatMap((e) => (e.retryAfterMs === undefined ? [] : [e.retryAfterMs]));
  const retryAfterMs = everyAgent ? (delays.length > 0 ? Math.min(...delays) : undefined) : ending.retryAfterMs;
  const message = everyAgent
    ? `Every agent (${agents.length}) is rate-limited; last error: ${last.message}`
    : `No valid output after ${attempts.length} attempt(s) across ${agents.length} agent(s); last error: ${last.message}`;
  throw new SmithersError(ending.code, message, {
    attempts: tried,
    ...(usage ? { usage } : {}),
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    ...(everyAgent ? { everyAgent: true } : {}),
    cause: lastError,
  });
}
