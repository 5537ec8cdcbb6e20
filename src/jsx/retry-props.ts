/**
 * The retry props of a `<Task>` or `<Subflow>`, checked at render: a workflow whose retry
 * settings cannot mean anything (a negative delay, an unknown backoff, half a retry) fails before
 * any task runs, naming the prop, instead of retrying in some way the author did not write.
 * What the values mean (defaults, delays) is the engine's: see src/engine/schedule/retry.ts.
 */
import { SmithersError } from "../errors/index.ts";
import type { RetryBackoff, RetryPolicy } from "./plan.ts";

const BACKOFFS: readonly RetryBackoff[] = ["fixed", "linear", "exponential"];
const POLICY_FIELDS: readonly string[] = ["backoff", "initialDelayMs", "maxDelayMs", "factor"];

export type RetryProps = {
  retries: number | undefined;
  retryPolicy: RetryPolicy | undefined;
  maxSchemaRetries: number | undefined;
};

function describe(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number" || typeof value === "boolean" || value === null || value === undefined) return String(value);
  return Array.isArray(value) ? "an array" : typeof value;
}

const isCount = (v: unknown): v is number => typeof v === "number" && v >= 0 && (Number.isInteger(v) || v === Infinity);
const isDelay = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0;

/**
 * `retries` (an integer >= 0 or Infinity; `noRetry` wins over it and makes it 0), `retryPolicy`
 * and, on a Task, `maxSchemaRetries` (an integer >= 0). Undefined where the author gave nothing.
 */
export function retryPropsOf(component: "Task" | "Subflow", id: string, props: Record<string, unknown>): RetryProps {
  const fail = (prop: string, value: unknown, expected: string) =>
    new SmithersError("INVALID_WORKFLOW", `<${component} id="${id}"> ${prop} must be ${expected}, got ${describe(value)}`, { nodeId: id, prop });
  const { noRetry, retries, maxSchemaRetries } = props;
  if (noRetry !== undefined && typeof noRetry !== "boolean") throw fail("noRetry", noRetry, "true or false");
  if (retries !== undefined && !isCount(retries)) throw fail("retries", retries, "a whole number >= 0 or Infinity");
  if (maxSchemaRetries !== undefined && !(Number.isSafeInteger(maxSchemaRetries) && (maxSchemaRetries as number) >= 0)) {
    throw fail("maxSchemaRetries", maxSchemaRetries, "a whole number >= 0");
  }
  return {
    retries: noRetry === true ? 0 : retries,
    retryPolicy: policyOf(props.retryPolicy, fail),
    maxSchemaRetries: maxSchemaRetries as number | undefined,
  };
}

function policyOf(value: unknown, fail: (prop: string, value: unknown, expected: string) => SmithersError): RetryPolicy | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw fail("retryPolicy", value, `an object with ${POLICY_FIELDS.join(", ")}`);
  }
  const fields = value as Record<string, unknown>;
  const unknown = Object.keys(fields).find((name) => fields[name] !== undefined && !POLICY_FIELDS.includes(name));
  if (unknown !== undefined) throw fail(`retryPolicy.${unknown}`, fields[unknown], `left out: a retryPolicy takes only ${POLICY_FIELDS.join(", ")}`);
  const { backoff, initialDelayMs, maxDelayMs, factor } = fields;
  if (backoff !== undefined && !BACKOFFS.includes(backoff as RetryBackoff)) {
    throw fail("retryPolicy.backoff", backoff, '"fixed", "linear" or "exponential"');
  }
  if (initialDelayMs !== undefined && !isDelay(initialDelayMs)) throw fail("retryPolicy.initialDelayMs", initialDelayMs, "a number of ms >= 0");
  if (maxDelayMs !== undefined && !isDelay(maxDelayMs)) throw fail("retryPolicy.maxDelayMs", maxDelayMs, "a number of ms >= 0");
  if (factor !== undefined && !(typeof factor === "number" && Number.isFinite(factor) && factor >= 1)) {
    throw fail("retryPolicy.factor", factor, "a number >= 1");
  }
  if (factor !== undefined && backoff !== undefined && backoff !== "exponential") {
    throw fail("retryPolicy.factor", factor, `left out with backoff "${String(backoff)}": it is the growth of exponential backoff`);
  }
  // A fresh object: the author's may be shared or changed later, the plan's is not.
  const policy: RetryPolicy = {};
  if (backoff !== undefined) policy.backoff = backoff as RetryBackoff;
  if (initialDelayMs !== undefined) policy.initialDelayMs = initialDelayMs;
  if (maxDelayMs !== undefined) policy.maxDelayMs = maxDelayMs;
  if (factor !== undefined) policy.factor = factor as number;
  return policy;
}
