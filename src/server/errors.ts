/** SmithersError codes as HTTP statuses (from their kind in the error table); every error body is `{ code, message }`. */
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { httpStatusOf, SmithersError } from "../errors/index.ts";

/** The HTTP status of an error: its code's kind's, else 500. */
export function httpStatus(error: unknown): ContentfulStatusCode {
  return (error instanceof SmithersError ? httpStatusOf(error.code) : 500) as ContentfulStatusCode;
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
