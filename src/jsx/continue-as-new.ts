/**
 * `<ContinueAsNew>`: ends the run and starts a fresh one, linked to it, with optional carried
 * state, so the history (frames, events, node rows) of each run stays small.
 */
import { SmithersError } from "../errors/index.ts";
import { makeElement, type SmithersElement } from "./element.ts";
import type { PlanContinue } from "./plan.ts";
import { ACCEPTED_PROPS, checkProps } from "./props.ts";

export const CONTINUE_AS_NEW_HOST = "smithers:continue-as-new";

/** The largest `state` handed over, in bytes of JSON. */
export const MAX_CONTINUATION_STATE_BYTES = 10 * 1024 * 1024;

export type ContinueAsNewProps = {
  /** JSON-serializable; the new run reads it as `ctx.input.__smithersContinuation.payload`. */
  state?: unknown;
};

/** What a continued run finds in `ctx.input.__smithersContinuation`. */
export type Continuation<P = unknown> = {
  /** The `state` of the `<ContinueAsNew>` that started this run (absent after `<Loop continueAsNewEvery>`). */
  payload?: P;
  /** The run this one continues. */
  fromRunId: string;
  /** 1 for the first continuation of a run, 2 for the next, … */
  generation: number;
};

/**
 * Once reached (in a sequence: when everything before it is done), nothing new starts; when no
 * task runs any more the run ends with status `continued` and a new run of the same workflow,
 * with the same input, starts with `state` as `ctx.input.__smithersContinuation.payload`. What
 * follows it in its sequence never runs in this run.
 * @example
 * <ContinueAsNew state={{ cursor: page.nextCursor, count: count + 1 }} />
 */
export function ContinueAsNew(props: ContinueAsNewProps): SmithersElement {
  checkProps("ContinueAsNew", props, ACCEPTED_PROPS.ContinueAsNew);
  return makeElement(CONTINUE_AS_NEW_HOST, props);
}

/** `continueAsNew(state)` is `<ContinueAsNew state={state} />`. */
export function continueAsNew(state?: unknown): SmithersElement {
  return ContinueAsNew(state === undefined ? {} : { state });
}

/**
 * Where in `value` JSON would change it (a Map or Set emptied, NaN made null, a function
 * dropped, a class instance flattened; an undefined field reads the same once absent), or undefined when JSON keeps it as is.
 * Dates are taken: they come back as ISO strings, as everywhere in ctx.
 */
function lossyJsonPath(value: unknown, path: string, seen = new Set<object>()): string | undefined {
  if (value === null || typeof value === "string" || typeof value === "boolean") return undefined;
  if (typeof value === "number") return Number.isFinite(value) ? undefined : `${path} (${value})`;
  if (typeof value !== "object") return `${path} (a ${typeof value})`;
  if (value instanceof Date) return undefined;
  if (seen.has(value)) return `${path} (a cycle)`;
  seen.add(value);
  const proto = Object.getPrototypeOf(value);
  if (!Array.isArray(value) && proto !== Object.prototype && proto !== null) return `${path} (a ${value.constructor?.name ?? "class instance"})`;
  for (const [key, item] of Object.entries(value)) {
    if (item === undefined && !Array.isArray(value)) continue; // an absent field reads the same
    const found = lossyJsonPath(item, Array.isArray(value) ? `${path}[${key}]` : `${path}.${key}`, seen);
    if (found) return found;
  }
  seen.delete(value);
  return undefined;
}

/** The plan node of a `<ContinueAsNew>`, its state checked: JSON-serializable, at most MAX_CONTINUATION_STATE_BYTES. */
export function planContinue(props: Record<string, unknown>): PlanContinue {
  checkProps("ContinueAsNew", props, ACCEPTED_PROPS.ContinueAsNew);
  const { state } = props;
  if (state === undefined) return { kind: "continue-as-new", state: undefined, stateBytes: 0 };
  const lossy = lossyJsonPath(state, "state");
  if (lossy) throw new SmithersError("INVALID_CONTINUATION_STATE", `<ContinueAsNew> ${lossy} would not survive JSON; carry plain JSON values`, { path: lossy });
  let text: string | undefined;
  try {
    text = JSON.stringify(state);
  } catch (cause) {
    throw new SmithersError("INVALID_CONTINUATION_STATE", `<ContinueAsNew> state is not JSON-serializable: ${(cause as Error)?.message ?? String(cause)}`, {
      cause,
    });
  }
  if (text === undefined) throw new SmithersError("INVALID_CONTINUATION_STATE", `<ContinueAsNew> state is not JSON-serializable (a ${typeof state})`);
  const stateBytes = Buffer.byteLength(text);
  if (stateBytes > MAX_CONTINUATION_STATE_BYTES) {
    throw new SmithersError(
      "CONTINUATION_STATE_TOO_LARGE",
      `<ContinueAsNew> state is ${stateBytes} bytes of JSON, more than the ${MAX_CONTINUATION_STATE_BYTES} allowed; carry a reference (a path, an id) instead`,
      { sizeBytes: stateBytes, maxBytes: MAX_CONTINUATION_STATE_BYTES },
    );
  }
  // The new run sees the state as JSON gives it back (no undefined fields, no Dates), so this run does too.
  return { kind: "continue-as-new", state: JSON.parse(text), stateBytes };
}
