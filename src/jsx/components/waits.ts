/** The waits: `<Timer>`, `<WaitForEvent>`, `<Signal>` and `<HumanTask>`, each a task the world completes. */
import type { z } from "zod";
import { SmithersError } from "../../errors/index.ts";
import { Fragment, makeElement, type SmithersElement, type SmithersNode } from "../element.ts";
import type { EventWaitSpec, HumanTaskSpec, OutputTarget, TimerSpec } from "../plan.ts";
import { ACCEPTED_PROPS, checkProps } from "../props.ts";
import { renderContext } from "../render-context.ts";
import { parseDuration } from "../duration.ts";
import { HOST } from "./host.ts";

export type TimerProps = {
  id: string;
  /** How long after the timer starts it fires: a number and a unit, "500ms", "30s", "5m", "2h", "7d". */
  duration?: string;
  /** When it fires: an ISO 8601 time or a Date (one in the past fires at once). */
  until?: string | Date;
  skipIf?: boolean;
  dependsOn?: readonly string[];
  label?: string;
};

/** Marks the task element a `<Timer>` renders to. */
export const TIMER_SPEC = "smithers:timer";

export { parseDuration };

/**
 * A durable sleep: the fire time is persisted when the timer starts; the run waits
 * (`waiting-timer`, its process may exit when the wait is long) and continues once, also when
 * the process was down at that time. It writes no output row.
 * @example
 * <Timer id="cool-down" duration="30m" />
 */
export function Timer(props: TimerProps): SmithersElement {
  const invalid = (message: string) => new SmithersError("INVALID_TIMER", `<Timer id="${props.id}"> ${message}`, { nodeId: props.id });
  // Not taken: every (recurring timers), meta (stored with an attempt; a timer runs none), async (a timer never holds up other branches).
  checkProps("Timer", props, ACCEPTED_PROPS.Timer);
  if ((props.duration === undefined) === (props.until === undefined)) throw invalid("needs exactly one of duration and until");
  let spec: TimerSpec;
  if (props.duration !== undefined) {
    const durationMs = typeof props.duration === "string" ? parseDuration(props.duration) : undefined;
    if (durationMs === undefined) throw invalid(`duration "${String(props.duration)}" is not a number with a unit (ms, s, m, h, d), like "30s"`);
    spec = { durationMs };
  } else {
    const untilMs = props.until instanceof Date ? props.until.getTime() : typeof props.until === "string" ? Date.parse(props.until) : Number.NaN;
    if (!Number.isFinite(untilMs)) throw invalid(`until "${String(props.until)}" is not an ISO 8601 time or a Date`);
    spec = { untilMs };
  }
  const { duration: _d, until: _u, ...rest } = props;
  return makeElement(HOST.task, { ...rest, children: null, [TIMER_SPEC]: spec });
}

function timeoutOf(component: string, id: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !(value > 0) || !Number.isFinite(value)) {
    throw new SmithersError("INVALID_WORKFLOW", `<${component} id="${id}"> timeoutMs must be a positive number of milliseconds`, { nodeId: id });
  }
  return value;
}

export type WaitForEventProps = {
  id: string;
  /** The signal name it waits for (what `smithers signal <run> <name>` sends). */
  event: string;
  output: OutputTarget;
  /** The payload's schema when it is narrower than the output's (or, with `tagged`, the payload inside the row). */
  outputSchema?: z.ZodObject;
  /** Only a signal sent with this correlation id matches; without one, any signal of the name does. */
  correlationId?: string;
  /** How long to wait from when the node starts. */
  timeoutMs?: number;
  /** On timeout: fail the node (default), skip it, or with `tagged` store `{ kind: "timeout" }`. */
  onTimeout?: "fail" | "skip" | "continue";
  /** Store `{ kind: "signal", payload }` / `{ kind: "timeout" }` instead of the bare payload. */
  tagged?: boolean;
  /** Only what depends on this node waits for the signal; other branches keep starting work. */
  async?: boolean;
  skipIf?: boolean;
  dependsOn?: readonly string[];
  label?: string;
};

/** Marks the task element a `<WaitForEvent>` renders to. */
export const EVENT_WAIT = "smithers:event";

/**
 * Waits durably for a signal (`smithers signal`, sendSignal()): the run may end its process
 * (`waiting-event`) and continues once one arrives; the payload, validated, is the node's row. A
 * signal sent before the node starts is kept and taken when it does; of several, the first in
 * arrival order.
 * @example
 * <WaitForEvent id="wait-deploy" event="deploy.completed" correlationId={ctx.input.deployId} output={outputs.deployed} timeoutMs={600_000} />
 */
export function WaitForEvent(props: WaitForEventProps): SmithersElement {
  checkProps("WaitForEvent", props, ACCEPTED_PROPS.WaitForEvent);
  const invalid = (message: string) => new SmithersError("INVALID_WORKFLOW", `<WaitForEvent id="${props.id}"> ${message}`, { nodeId: props.id });
  if (typeof props.event !== "string" || props.event === "") throw invalid("needs event: the signal name to wait for");
  if (props.correlationId !== undefined && props.correlationId !== null && typeof props.correlationId !== "string") {
    throw invalid("correlationId must be a string");
  }
  const onTimeout = props.onTimeout ?? "fail";
  if (!["fail", "skip", "continue"].includes(onTimeout)) throw invalid(`onTimeout must be "fail", "skip" or "continue", got "${String(onTimeout)}"`);
  const tagged = Boolean(props.tagged);
  if (onTimeout === "continue" && !tagged) {
    throw invalid('onTimeout="continue" needs tagged: without it a timeout would have no row to store ({ kind: "timeout" } is the tagged row)');
  }
  const spec: EventWaitSpec = {
    event: props.event,
    correlationId: props.correlationId ?? undefined,
    payloadSchema: props.outputSchema,
    timeoutMs: timeoutOf("WaitForEvent", props.id, props.timeoutMs),
    onTimeout,
    tagged,
  };
  const { event: _e, correlationId: _c, timeoutMs: _t, onTimeout: _o, tagged: _g, outputSchema: _s, ...rest } = props;
  return makeElement(HOST.task, { ...rest, children: null, [EVENT_WAIT]: spec });
}

export type SignalProps<S extends z.ZodObject = z.ZodObject> = Omit<WaitForEventProps, "event" | "output" | "outputSchema"> & {
  /** The payload's schema, also the output it is stored in (one of createSmithers' `outputs`). */
  schema: S;
  /** Mounted once the payload arrived, with it. */
  children?: (data: z.output<S>) => SmithersNode;
};

/**
 * A typed `<WaitForEvent>` whose signal name is its id; its children function mounts, with the
 * payload, once the signal arrived.
 * @example
 * <Signal id="user-feedback" schema={outputs.feedback}>{(f) => <Task id="thank" output={outputs.note}>{{ text: f.comment }}</Task>}</Signal>
 */
export function Signal<S extends z.ZodObject>(props: SignalProps<S>): SmithersNode {
  checkProps("Signal", props, ACCEPTED_PROPS.Signal);
  const { schema, children, ...rest } = props;
  if (children !== undefined && children !== null && typeof children !== "function") {
    throw new SmithersError("INVALID_WORKFLOW", `<Signal id="${props.id}"> children must be a function of the payload`, { nodeId: props.id });
  }
  const wait = WaitForEvent({ ...rest, event: props.id, output: schema });
  if (!children) return wait;
  const data = renderContext()?.outputMaybe(schema, { nodeId: props.id }) as z.output<S> | undefined;
  return data === undefined ? wait : makeElement(Fragment, { children: [wait, children(data)] });
}

export type HumanTaskProps = {
  id: string;
  output: OutputTarget;
  outputSchema?: z.ZodObject;
  /** What the person is asked; their answer is JSON matching the output schema. */
  prompt: string;
  /** Answers that fail the schema are asked again, up to this many asks in all (default 10). */
  maxAttempts?: number;
  /** How long each ask stays open before the node fails with HUMAN_TASK_TIMEOUT. */
  timeoutMs?: number;
  /** Only what depends on this node waits for the answer. */
  async?: boolean;
  skipIf?: boolean;
  continueOnFail?: boolean;
  dependsOn?: readonly string[];
  label?: string;
};

/** Marks the task element a `<HumanTask>` renders to. */
export const HUMAN_TASK = "smithers:human";

/** Default asks of a `<HumanTask>` whose answers fail its schema. */
export const DEFAULT_HUMAN_MAX_ATTEMPTS = 10;

/**
 * Asks a person for JSON matching the output schema: a request appears in `smithers human list`,
 * the run waits (`waiting-approval`, its process may exit), and `smithers human answer` (checked
 * against the schema) lets it continue with the answer as the node's row.
 * @example
 * <HumanTask id="review" output={outputs.review} prompt="Review the PR: approved (boolean) and comments (string)" />
 */
export function HumanTask(props: HumanTaskProps): SmithersElement {
  checkProps("HumanTask", props, ACCEPTED_PROPS.HumanTask);
  const invalid = (message: string) => new SmithersError("INVALID_WORKFLOW", `<HumanTask id="${props.id}"> ${message}`, { nodeId: props.id });
  if (typeof props.prompt !== "string" || props.prompt.trim() === "") throw invalid("needs prompt: the text the person is asked");
  const maxAttempts = props.maxAttempts ?? DEFAULT_HUMAN_MAX_ATTEMPTS;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw invalid("maxAttempts must be a positive integer");
  const spec: HumanTaskSpec = { prompt: props.prompt, maxAttempts, timeoutMs: timeoutOf("HumanTask", props.id, props.timeoutMs) };
  const { prompt: _p, maxAttempts: _m, timeoutMs: _t, ...rest } = props;
  return makeElement(HOST.task, { ...rest, children: null, [HUMAN_TASK]: spec });
}
