/**
 * Every failure Smithers reports is a SmithersError with a stable `code` from
 * SMITHERS_ERROR_CODES; callers branch on the code, never on the message.
 */
export const SMITHERS_ERROR_CODES = [
  // input and authoring
  "INVALID_INPUT",
  "INPUT_MISMATCH",
  "MISSING_OUTPUT",
  "DUPLICATE_ID",
  "INVALID_WORKFLOW",
  "UNSUPPORTED_SCHEMA",
  "CUSTOM_TABLE_INVALID",
  "OUTPUT_NOT_FOUND",
  "WORKFLOW_LOAD_FAILED",
  "USAGE",
  "INVALID_OPTION",
  // execution
  "INVALID_OUTPUT",
  "AGENT_FAILED",
  "AGENT_REPLY_NOT_JSON",
  "TASK_FAILED",
  "TASK_TIMEOUT",
  "TASK_CANCELLED",
  "TASK_ABANDONED",
  "LOOP_MAX_REACHED",
  "RUN_NOT_FOUND",
  "RUN_NOT_RESUMABLE",
  "RUN_EXISTS",
  "RUN_OWNED",
  "RUN_STILL_RUNNING",
  // storage
  "DB_WRITE_FAILED",
  "DB_NESTED_TRANSACTION",
  "DB_CLOSED",
  "SCHEMA_DRIFT",
  "INVALID_FRAME",
  "FRAME_NOT_FOUND",
  "FRAME_CORRUPT",
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

  static is(value: unknown, code?: SmithersErrorCode): value is SmithersError {
    return value instanceof SmithersError && (code === undefined || value.code === code);
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

/** A JSON-safe description of any thrown value, for `error_json` columns and events. */
export function errorToJson(error: unknown): Record<string, unknown> {
  if (error instanceof SmithersError) {
    const { cause, ...rest } = error.details;
    return {
      name: error.name,
      code: error.code,
      message: error.message,
      ...rest,
      ...(cause === undefined ? {} : { cause: errorToJson(cause) }),
    };
  }
  if (error instanceof Error) {
    const out: Record<string, unknown> = { name: error.name, message: error.message };
    const code = (error as { code?: unknown }).code;
    if (typeof code === "string") out.code = code;
    if (error.cause !== undefined) out.cause = errorToJson(error.cause);
    return out;
  }
  if (typeof error === "object" && error !== null) return { message: JSON.stringify(error) };
  return { message: String(error) };
}
