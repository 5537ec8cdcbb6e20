/** SmithersError codes as HTTP statuses; every error body is `{ code, message }`. */
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { SmithersError, type SmithersErrorCode } from "../errors/index.ts";

const STATUS: Partial<Record<SmithersErrorCode, ContentfulStatusCode>> = {
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  UNSUPPORTED_MEDIA_TYPE: 415,
  BODY_TOO_LARGE: 413,
  INVALID_RUN_ID: 400,
  DB_WRITE_FAILED: 503,
  RUN_NOT_FOUND: 404,
  APPROVAL_NOT_FOUND: 404,
  HUMAN_REQUEST_NOT_FOUND: 404,
  FRAME_NOT_FOUND: 404,
  WORKFLOW_LOAD_FAILED: 404,
  USAGE: 400,
  INVALID_INPUT: 400,
  INVALID_OPTION: 400,
  INPUT_MISMATCH: 400,
  APPROVAL_INVALID: 400,
  APPROVAL_AMBIGUOUS: 400,
  SIGNAL_INVALID: 400,
  HUMAN_ANSWER_INVALID: 400,
  RUN_EXISTS: 409,
  RUN_OWNED: 409,
  RUN_STILL_RUNNING: 409,
  RUN_ENDED: 409,
  RUN_NOT_RESUMABLE: 409,
  APPROVAL_DECIDED: 409,
  HUMAN_REQUEST_CLOSED: 409,
  QUEUE_FULL: 503,
  NODE_NOT_FOUND: 400,
  SIDE_EFFECT_BOUNDARY: 409,
  WORKFLOW_CHANGED: 409,
  RUN_NOT_REWINDABLE: 409,
};

/** The HTTP status of an error: its code's, else 500. */
export function httpStatus(error: unknown): ContentfulStatusCode {
  return (error instanceof SmithersError && STATUS[error.code]) || 500;
}

/**
 * Answers with the error as `{ code, message }`, plus `fields` (`{ path, message }` each) when the
 * error names the fields at fault (a human answer that fails its schema); a full queue also says
 * when to retry.
 */
export function errorResponse(c: Context, error: unknown): Response {
  const status = httpStatus(error);
  const code = error instanceof SmithersError ? error.code : "ENGINE_ERROR";
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof SmithersError && error.code === "QUEUE_FULL") c.header("Retry-After", String(error.details?.retryAfterSeconds ?? 1));
  const fields = error instanceof SmithersError && Array.isArray(error.details.fields) ? error.details.fields : undefined;
  return c.json({ code, message, ...(fields ? { fields } : {}) }, status);
}
