import { capString, SAFE_JSON_LIMITS, safeStringify, toSafeJson } from "./safe-json.ts";

export { capString, safeStringify, toSafeJson, SAFE_JSON_LIMITS, type SafeJsonLimits } from "./safe-json.ts";

/**
 * Every failure Smithers reports is a SmithersError with a stable `code` from
 * SMITHERS_ERROR_CODES; callers branch on the code, never on the message.
 */
export const SMITHERS_ERROR_CODES = [
  // input and authoring
  "INVALID_INPUT",
  "INPUT_MISMATCH",
  "INVALID_RUN_ID",
  "MISSING_OUTPUT",
  "DUPLICATE_ID",
  "INVALID_WORKFLOW",
  "UNSUPPORTED_PROP",
  "CONTEXT_OUTSIDE_WORKFLOW",
  "UNSUPPORTED_SCHEMA",
  "CUSTOM_TABLE_INVALID",
  "OUTPUT_NOT_FOUND",
  "WORKFLOW_LOAD_FAILED",
  "USAGE",
  "INVALID_OPTION",
  "INVALID_CRON",
  "CRON_EXISTS",
  "CRON_NOT_FOUND",
  // HTTP server
  "UNAUTHORIZED",
  "FORBIDDEN",
  "UNSUPPORTED_MEDIA_TYPE",
  "QUEUE_FULL",
  "BODY_TOO_LARGE",
  "TOKEN_TOO_SHORT",
  "TLS_REQUIRED",
  // execution
  "INVALID_OUTPUT",
  "AGENT_FAILED",
  "AGENT_REPLY_NOT_JSON",
  // agents, CLIs and tools
  "AGENT_CLI_NOT_FOUND",
  "AGENT_CLI_EXIT",
  "AGENT_AUTH_FAILED",
  "AGENT_STREAM_MALFORMED",
  "AGENT_TIMEOUT",
  "BUDGET_EXCEEDED",
  "BUDGET_UNPRICED",
  "TOOL_INVALID_INPUT",
  "TOOL_PATH_OUTSIDE_ROOT",
  "TOOL_FAILED",
  "TOOL_TIMEOUT",
  "TOOL_OUTPUT_TOO_LARGE",
  "TOOL_CONTEXT_MISSING",
  "TASK_FAILED",
  "TASK_TIMEOUT",
  "TASK_CANCELLED",
  "TASK_ABANDONED",
  "TASK_CRASH_LOOP",
  "CACHE_KEY_FAILED",
  "APPROVAL_DENIED",
  "APPROVAL_NOT_FOUND",
  "APPROVAL_DECIDED",
  "APPROVAL_AMBIGUOUS",
  "APPROVAL_INVALID",
  "INVALID_TIMER",
  "SIGNAL_INVALID",
  "SIGNAL_TIMEOUT",
  "HUMAN_REQUEST_NOT_FOUND",
  "HUMAN_REQUEST_CLOSED",
  "HUMAN_ANSWER_INVALID",
  "HUMAN_TASK_TIMEOUT",
  "HUMAN_TASK_CANCELLED",
  "LOOP_MAX_REACHED",
  "SAGA_FAILED",
  "SAGA_COMPENSATION_FAILED",
  "CONTINUATION_STATE_TOO_LARGE",
  "INVALID_CONTINUATION_STATE",
  "WORKTREE_NOT_IN_REPO",
  "WORKTREE_INVALID",
  "WORKTREE_FAILED",
  "DEPENDENCY_DEADLOCK",
  "SUBFLOW_FAILED",
  "SUBFLOW_WAITING",
  "RUN_NOT_FOUND",
  "RUN_NOT_RESUMABLE",
  "RUN_EXISTS",
  "RUN_OWNED",
  "RUN_STILL_RUNNING",
  "RUN_ENDED",
  "ENGINE_ERROR",
  // storage
  "DB_WRITE_FAILED",
  "DB_NESTED_TRANSACTION",
  "DB_CLOSED",
  "DB_SYNC_READ_UNSUPPORTED",
  "DB_UNAVAILABLE",
  "DB_UNSUPPORTED",
  "SCHEMA_DRIFT",
  "INVALID_FRAME",
  "FRAME_NOT_FOUND",
  "FRAME_CORRUPT",
  // time travel and code pinning
  "WORKFLOW_CHANGED",
  "SIDE_EFFECT_BOUNDARY",
  "NODE_NOT_FOUND",
  "RUN_NOT_REWINDABLE",
] as const;

export type SmithersErrorCode = (typeof SMITHERS_ERROR_CODES)[number];

export type SmithersErrorDetails = {
  nodeId?: string;
  iteration?: number;
  attempt?: number;
  cause?: unknown;
  [key: string]: unknown;
};

export class SmithersError extends Error {
  readonly code: SmithersErrorCode;
  readonly details: SmithersErrorDetails;

  constructor(code: SmithersErrorCode, message: string, details: SmithersErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = "SmithersError";
    this.code = code;
    this.details = details;
  }

  get nodeId(): string | undefined {
    return this.details.nodeId;
  }

  get attempt(): number | undefined {
    return this.details.attempt;
  }

  /** The message (smithers-orchestrator's name for it without its docs link; messages here carry none). */
  get summary(): string {
    return this.message;
  }

  static is(value: unknown, code?: SmithersErrorCode): value is SmithersError {
    return isInstance(value, SmithersError) && (code === undefined || value.code === code);
  }
}

/** Thrown by a task to fail at once: the runtime never retries it. */
export class FatalError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "FatalError";
  }
}

/** Thrown by a task to ask for another attempt, optionally after `retryAfterMs`. */
export class RetryableError extends Error {
  readonly retryAfterMs: number | undefined;
  constructor(message: string, options?: { cause?: unknown; retryAfterMs?: number }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "RetryableError";
    this.retryAfterMs = options?.retryAfterMs;
  }
}

/**
 * `value instanceof type`, false instead of a throw for values that cannot be asked (a revoked
 * Proxy, a Proxy whose getPrototypeOf trap throws): thrown values come from user code.
 */
export function isInstance<T>(value: unknown, type: abstract new (...args: never[]) => T): value is T {
  try {
    return value instanceof type;
  } catch {
    return false;
  }
}

/** A short text for any thrown value: an Error's message, a string as is, anything else as bounded JSON. */
export function describeThrown(value: unknown): string {
  try {
    if (isInstance(value, Error)) return capString(String(value.message));
    if (typeof value === "string") return capString(value);
    if (typeof value === "object" && value !== null) return capString(safeStringify(value, { ...SAFE_JSON_LIMITS, totalChars: SAFE_JSON_LIMITS.stringChars }));
    return capString(String(value));
  } catch {
    return "[a thrown value that cannot be described]";
  }
}

/**
 * A JSON-safe, bounded description of any thrown value, for `error_json` columns and events:
 * a SmithersError's code, message and details, an Error's fields, anything else as its message.
 * Bounded by SAFE_JSON_LIMITS; JSON.stringify of it never throws.
 */
export function errorToJson(error: unknown): Record<string, unknown> {
  let source: unknown;
  if (SmithersError.is(error)) {
    const { cause, ...rest } = error.details;
    source = { name: error.name, code: error.code, message: error.message, ...rest, ...(cause === undefined ? {} : { cause }) };
  } else if (isInstance(error, Error)) {
    source = error; // walked as its fields: name, message, code, own fields, cause
  } else {
    source = { message: describeThrown(error) };
  }
  const safe = toSafeJson(source);
  return typeof safe === "object" && safe !== null && !Array.isArray(safe) ? (safe as Record<string, unknown>) : { message: String(safe) };
}

/**
 * The error without its bulky details (nested causes, issue lists, agent attempts): name, code,
 * message and scalar details such as nodeId and attempt. The run row and the journal's events
 * carry this; the attempt row carries the whole errorToJson.
 */
export function errorSummaryJson(error: unknown): Record<string, unknown> {
  const full = errorToJson(error);
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(full)) {
    if (typeof value === "number" || typeof value === "boolean") out[key] = value;
    else if (typeof value === "string") out[key] = key === "message" ? value : capString(value, 200);
  }
  return out;
}

/** errorToJson as stored text: never throws, never longer than SAFE_JSON_LIMITS.totalChars. */
export function errorJsonText(error: unknown): string {
  const text = safeStringify(errorToJson(error), SAFE_JSON_LIMITS, () => errorSummaryJson(error));
  if (!text.startsWith('{"truncated":true')) return text;
  // Even the summary was too large once escaped: keep what identifies the error.
  const { name, code, message } = errorSummaryJson(error);
  return JSON.stringify({ name, code, message: capString(String(message ?? ""), 256), truncated: true });
}

/** The bounds every stored error obeys. */
export const ERROR_JSON_LIMITS = SAFE_JSON_LIMITS;
