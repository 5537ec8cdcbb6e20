import { capString, SAFE_JSON_LIMITS, safeStringify, toSafeJson } from "./safe-json.ts";
import { nextStack, type StackCount } from "./stack.ts";

export { capString, safeStringify, toSafeJson, SAFE_JSON_LIMITS, type SafeJsonLimits } from "./safe-json.ts";
export { firstUserFrame, frameLocation, relativeFrame, sourceFileOf, STACK_LIMITS, storedStack, userStack, type FrameLocation } from "./stack.ts";

/**
 * Every failure Smithers reports is a SmithersError with a stable `code` from the error table
 * (codes.ts); callers branch on the code, never on the message.
 */
import { codeMatches, type SmithersErrorCode } from "./codes.ts";

export {
  codeMatches,
  ERROR_KINDS,
  ERROR_TABLE,
  errorKind,
  exitCodeOf,
  httpStatusOf,
  SMITHERS_ERROR_CODES,
  type ErrorKind,
  type SmithersErrorCode,
} from "./codes.ts";

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

  /** With `code`: also true for a code's former name (`LOOP_MAX_REACHED` matches `RALPH_MAX_REACHED`). */
  static is(value: unknown, code?: SmithersErrorCode): value is SmithersError {
    return isInstance(value, SmithersError) && (code === undefined || codeMatches(value.code, code));
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
 * Each error along the chain that was thrown from the author's code keeps `stack`: its frames in
 * the author's files, the internal ones counted (see stack.ts, STACK_LIMITS).
 * Bounded by SAFE_JSON_LIMITS; JSON.stringify of it never throws.
 */
export function errorToJson(error: unknown): Record<string, unknown> {
  let source: unknown;
  const stacks: StackCount = { kept: 0 };
  if (SmithersError.is(error)) {
    const { cause, ...rest } = error.details;
    const stack = nextStack(stacks, readStack(error));
    source = { name: error.name, code: error.code, message: error.message, ...rest, ...(stack ? { stack } : {}), ...(cause === undefined ? {} : { cause }) };
  } else if (isInstance(error, Error)) {
    source = error; // walked as its fields: name, message, code, own fields, the author's stack frames, cause
  } else {
    source = { message: describeThrown(error) };
  }
  const safe = toSafeJson(source, SAFE_JSON_LIMITS, stacks);
  return typeof safe === "object" && safe !== null && !Array.isArray(safe) ? (safe as Record<string, unknown>) : { message: String(safe) };
}

function readStack(error: Error): unknown {
  try {
    return error.stack;
  } catch {
    return undefined;
  }
}

/**
 * The error without its bulky details (nested causes, issue lists, agent attempts, stacks): name, code,
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
