/**
 * The JSX surface. Each component returns a host element (`smithers:*`) that render() turns
 * into Plan nodes; Branch resolves on the spot, so the branch not taken is absent from the plan.
 */
import { z } from "zod";
import { SmithersError } from "../errors/index.ts";
import type { Agent } from "../agents/index.ts";
import { Fragment, makeElement, type SmithersElement, type SmithersNode } from "./element.ts";
import type { ApprovalOption, ApprovalSpec, CachePolicy, EventWaitSpec, HumanTaskSpec, OutputTarget, RetryPolicy, TaskRunContext, TimerSpec } from "./plan.ts";
import { ACCEPTED_PROPS, checkProps } from "./props.ts";
import { renderContext } from "./render-context.ts";

type TaskValue<S> = S extends z.ZodType ? z.input<S> : Record<string, unknown>;

/** The row type of an output target: the schema's output for a Zod schema, else a plain record. */
export type RowOf<T> = T extends z.ZodType ? z.output<T> : Record<string, unknown>;

/** Upstream outputs a task reads through `deps`, by the name it gives each. */
export type DepsSpec = Record<string, OutputTarget>;

type WorkChildren<S> =
  | string
  | number
  | readonly (string | number)[]
  | TaskValue<S>
  | SmithersElement
  | ((ctx: TaskRunContext) => TaskValue<S> | Promise<TaskValue<S>>);
type DepsChildren<S, D extends DepsSpec> = (deps: { [K in keyof D]: RowOf<D[K]> }) => string | TaskValue<S> | SmithersElement | Promise<TaskValue<S>>;

type TaskCommonProps<S extends OutputTarget> = {
  id: string;
  output: S;
  /** Validation schema for a custom Drizzle table output. */
  outputSchema?: z.ZodObject;
  agent?: Agent | readonly Agent[];
  /** Tried when `agent` (or every agent of its list) failed, as the last of the list. */
  fallbackAgent?: Agent;
  /**
   * Attempts after the first failed one: a whole number >= 0, or Infinity to retry until it
   * succeeds (or throws a FatalError). Default 3 (a task with a static object as its output: 0,
   * since it would fail the same way again). A FatalError is never retried.
   * @example <Task id="fetch" output={outputs.page} retries={Infinity}>{fetchPage}</Task>
   */
  retries?: number;
  /**
   * The wait before each retry: `fixed` waits `initialDelayMs` every time, `linear`
   * `initialDelayMs * n` before the n-th retry, `exponential` `initialDelayMs * factor^(n-1)`
   * (factor 2 unless given); every wait is capped at `maxDelayMs` (default 5 min). Without it: exponential from 1 s.
   * Inside a policy, an absent `backoff` is "fixed" and an absent `initialDelayMs` is 0. A
   * RetryableError's `retryAfterMs` replaces the computed wait.
   * @example retryPolicy={{ backoff: "exponential", initialDelayMs: 1_000 }}
   */
  retryPolicy?: RetryPolicy;
  /** Never retry this task, whatever `retries` says (noRetry wins when both are given). */
  noRetry?: boolean;
  /**
   * Correction calls to an agent whose reply does not match the output schema, each quoting the
   * validation error, before the attempt fails (default 3; 0: no correction call). Made within
   * one attempt, per agent of a fallback list; they do not count against `retries`.
   */
  maxSchemaRetries?: number;
  timeoutMs?: number;
  /**
   * How many times an attempt may be abandoned because its process died (kill -9, OOM, a task
   * that kills its own process) before the task fails with TASK_CRASH_LOOP (default 3).
   */
  maxAbandons?: number;
  skipIf?: boolean;
  continueOnFail?: boolean;
  dependsOn?: readonly string[];
  label?: string;
  meta?: Record<string, unknown>;
  /**
   * The task starts only once a person approved it (`smithers approve`, approve()); the run waits
   * `waiting-approval` until then. A denial fails the task with APPROVAL_DENIED.
   */
  needsApproval?: boolean;
  /** With needsApproval: only what depends on this task waits for the approval; other branches run on. */
  async?: boolean;
  /** Named upstream node ids: the task waits for them (like dependsOn); with `deps`, a key's node id. */
  needs?: Record<string, string>;
  /**
   * Reuse the output of an earlier run of this task instead of running it: on a hit the stored
   * row is written as this task's output and its body (agent or function) does not run. The key
   * is the workflow name (scope "workflow", the default; plus the run id for scope "run"; neither
   * for "global"), the node id (or `key`), the stable JSON of `by(ctx)`, `version`, the agents'
   * ids and the output table's schema signature; a schema change, a bumped version or an entry
   * older than `ttlMs` is a miss. Only for pure work: a cached deploy does not deploy.
   * @example
   * <Task id="analyze" output={outputs.analysis} agent={analyst} cache={{ by: (ctx) => ({ repo: ctx.input.repo }), version: "v2" }}>
   *   {`Analyze ${ctx.input.repo}`}
   * </Task>
   */
  cache?: CachePolicy;
};

export type TaskProps<S extends OutputTarget = OutputTarget> = TaskCommonProps<S> & {
  deps?: undefined;
  depsOptional?: undefined;
  /** A prompt (with `agent`: a string or JSX), a compute function, or a static output value. */
  children: WorkChildren<S>;
};

/** A `<Task deps>`: its children are a function of the upstream rows. */
export type TaskWithDepsProps<S extends OutputTarget = OutputTarget, D extends DepsSpec = DepsSpec> = TaskCommonProps<S> & {
  /**
   * Upstream outputs, by task id (or the id `needs` maps the key to): the task waits until each has
   * its row, then its children function gets them (`{(deps) => …}`): a prompt, a row, or JSX.
   */
  deps: D;
  /** Run once the deps that will have rows have them, leaving the others out. */
  depsOptional?: boolean;
  children: DepsChildren<S, D>;
};

export type WorkflowProps = {
  name: string;
  /**
   * Caches every agent task that has no `cache` of its own, keyed by its prompt and iteration
   * (scope "workflow", no expiry); compute and static tasks are cached only by their own `cache`.
   */
  cache?: boolean;
  children?: SmithersNode;
};
export type SequenceProps = { skipIf?: boolean; children?: SmithersNode };
export type ParallelProps = {
  /** At most this many tasks of this Parallel run at once. */
  maxConcurrency?: number;
  /** At most this many direct children (whole subtrees) in flight at once, admitted in document order. */
  subtreeConcurrency?: number;
  skipIf?: boolean;
  children?: SmithersNode;
};
export type BranchProps = { if: unknown; then: SmithersNode; else?: SmithersNode; skipIf?: boolean };
export type LoopProps = {
  id?: string;
  until: unknown;
  maxIterations?: number;
  onMaxReached?: "fail" | "return-last";
  /** Every this many iterations the run continues as a new run (see `<ContinueAsNew>`), carrying the loop's iteration and the latest outputs. */
  continueAsNewEvery?: number;
  skipIf?: boolean;
  children?: SmithersNode;
};

/**
 * A child run of another workflow, linked to this run, whose result becomes this node's output
 * row. Only `mode="childRun"` with a SmithersWorkflow value is supported; the other props the
 * peer documents (`cache`, `needs`, heartbeats, `mode="inline"`, a WorkflowFileRef) fail at render.
 */
export type SubflowProps<S extends OutputTarget = OutputTarget> = {
  id: string;
  /** A workflow file's default export (the value `smithers(build)` returns). */
  workflow: unknown;
  output: S;
  /** The child's `ctx.input`. */
  input?: unknown;
  mode?: "childRun";
  /**
   * Times the child run is resumed after it failed (each gives its failed tasks a fresh budget of
   * their own retries): a whole number >= 0 or Infinity, default 0 since the child's tasks retry
   * by themselves. See TaskProps for `retryPolicy` and `noRetry`.
   */
  retries?: number;
  retryPolicy?: RetryPolicy;
  noRetry?: boolean;
  timeoutMs?: number;
  skipIf?: boolean;
  continueOnFail?: boolean;
  dependsOn?: readonly string[];
  label?: string;
  meta?: Record<string, unknown>;
};

export const HOST = {
  workflow: "smithers:workflow",
  task: "smithers:task",
  sequence: "smithers:sequence",
  parallel: "smithers:parallel",
  loop: "smithers:loop",
  subflow: "smithers:subflow",
} as const;

/** Root of a workflow: its direct children run in sequence. */
export function Workflow(props: WorkflowProps): SmithersElement {
  return makeElement(HOST.workflow, props);
}

/** One durable step writing one validated row to its output table. */
export function Task<S extends OutputTarget>(props: TaskProps<S>): SmithersElement;
export function Task<S extends OutputTarget, D extends DepsSpec>(props: TaskWithDepsProps<S, D>): SmithersElement;
export function Task(props: TaskProps | TaskWithDepsProps): SmithersElement {
  return makeElement(HOST.task, props as Record<string, unknown>);
}

/** Runs another workflow as a child run; its result is written as this node's output row. */
export function Subflow<S extends OutputTarget>(props: SubflowProps<S>): SmithersElement {
  return makeElement(HOST.subflow, props as Record<string, unknown>);
}

/** Children in order: each starts once the one before finished or was skipped. */
export function Sequence(props: SequenceProps): SmithersNode {
  return props.skipIf ? null : makeElement(HOST.sequence, props);
}

/** Children run concurrently, at most `maxConcurrency` tasks at a time. */
export function Parallel(props: ParallelProps): SmithersNode {
  return props.skipIf ? null : makeElement(HOST.parallel, props);
}

/** Mounts `then` when `if` is truthy, else `else`; nothing with `skipIf`. */
export function Branch(props: BranchProps): SmithersNode {
  checkProps("Branch", props, ACCEPTED_PROPS.Branch);
  if (props.skipIf) return null;
  return props.if ? props.then : (props.else ?? null);
}

/** Re-runs its children with iteration 0, 1, 2… until `until` is truthy or `maxIterations` is reached. */
export function Loop(props: LoopProps): SmithersNode {
  return props.skipIf ? null : makeElement(HOST.loop, props);
}

/** The row an approve-mode `<Approval>` writes; use it (or a schema with these fields) as its output. */
export const approvalDecisionSchema = z.object({
  approved: z.boolean(),
  note: z.string().nullable(),
  decidedBy: z.string().nullable(),
  /** ISO 8601 time of the decision. */
  decidedAt: z.string().nullable(),
});

/** The row a `mode="select"` `<Approval>` writes: the key of the chosen option. */
export const approvalSelectionSchema = z.object({
  selected: z.string(),
  notes: z.string().nullable(),
});

/** The row a `mode="rank"` `<Approval>` writes: every option's key, best first. */
export const approvalRankingSchema = z.object({
  ranked: z.array(z.string()),
  notes: z.string().nullable(),
});

export type ApprovalProps = {
  id: string;
  output: OutputTarget;
  outputSchema?: z.ZodObject;
  request: ApprovalSpec["request"];
  onDeny?: ApprovalSpec["onDeny"];
  /** `approve` (default) writes approvalDecisionSchema; `select` and `rank` choose among `options`. */
  mode?: "approve" | "select" | "rank";
  /** Required for `select` and `rank`: what the person chooses among (unique keys). */
  options?: readonly ApprovalOption[];
  /** Only what depends on the approval waits (later in its Sequence, dependsOn); other branches run on. */
  async?: boolean;
  skipIf?: boolean;
  dependsOn?: readonly string[];
  /** Named upstream node ids the approval waits for, like dependsOn. */
  needs?: Record<string, string>;
  label?: string;
};

/** Marks the task element an `<Approval>` renders to (a prop name no author writes). */
export const APPROVAL_GATE = "smithers:approval";

const DEFAULT_APPROVAL_SCHEMA = { approve: approvalDecisionSchema, select: approvalSelectionSchema, rank: approvalRankingSchema } as const;

/** The options of a select/rank approval, checked: a non-empty array of `{ key, label }` with unique keys. */
function checkOptions(options: unknown, invalid: (message: string) => SmithersError): readonly ApprovalOption[] {
  if (!Array.isArray(options) || options.length === 0) throw invalid("needs options={[{ key, label }, …]} (at least one) for this mode");
  const keys = new Set<string>();
  for (const option of options as unknown[]) {
    const o = option as Partial<ApprovalOption> | null;
    if (typeof o !== "object" || o === null || typeof o.key !== "string" || o.key === "" || typeof o.label !== "string") {
      throw invalid(`each option needs a non-empty string key and a string label, got ${JSON.stringify(option)}`);
    }
    if (keys.has(o.key)) throw invalid(`option key "${o.key}" appears twice`);
    keys.add(o.key);
  }
  return options as ApprovalOption[];
}

/** The output schema must take the row the mode writes, or a person would decide for nothing: checked now, not after. */
function checkDecisionSchema(
  mode: "approve" | "select" | "rank",
  options: readonly ApprovalOption[] | undefined,
  props: ApprovalProps,
  invalid: (message: string) => SmithersError,
): void {
  const schema = props.outputSchema ?? (props.output instanceof z.ZodObject ? props.output : undefined);
  if (!schema) return; // a custom table without outputSchema: checked when the row is written
  const keys = (options ?? []).map((o) => o.key);
  const sample =
    mode === "select"
      ? { selected: keys[0], notes: null, decidedBy: null, decidedAt: null }
      : mode === "rank"
        ? { ranked: keys, notes: null, decidedBy: null, decidedAt: null }
        : { approved: true, note: null, decidedBy: null, decidedAt: null };
  if (!schema.safeParse(sample).success) {
    const name = { approve: "approvalDecisionSchema", select: "approvalSelectionSchema", rank: "approvalRankingSchema" }[mode];
    throw invalid(`its output schema does not take the row mode "${mode}" writes; use ${name} (or a schema with its fields)`);
  }
}

/**
 * A durable human decision: the run waits (status `waiting-approval`, its process may exit) until
 * someone runs `smithers approve|deny` or calls approve()/deny(), then continues once resumed; the
 * decision is the node's output row (approvalDecisionSchema; with `mode="select"` the chosen
 * option's key, approvalSelectionSchema; with `mode="rank"` every key in order, approvalRankingSchema).
 * @example
 * <Approval id="ship-it" output={outputs.approval} request={{ title: "Deploy to production?" }} />
 */
export function Approval(props: ApprovalProps): SmithersElement {
  const invalid = (message: string) => new SmithersError("INVALID_WORKFLOW", `<Approval id="${props.id}"> ${message}`, { nodeId: props.id });
  checkProps("Approval", props, ACCEPTED_PROPS.Approval);
  const mode = props.mode ?? "approve";
  if (mode !== "approve" && mode !== "select" && mode !== "rank") throw invalid(`mode must be "approve", "select" or "rank", got "${String(mode)}"`);
  if (!props.request || typeof props.request.title !== "string" || props.request.title === "") throw invalid("needs request={{ title }}");
  const onDeny = props.onDeny ?? "fail";
  if (!["fail", "continue", "skip"].includes(onDeny)) throw invalid(`onDeny must be "fail", "continue" or "skip", got "${String(onDeny)}"`);
  let options: readonly ApprovalOption[] | undefined;
  if (mode === "approve") {
    if (props.options !== undefined) throw invalid('options only apply to mode "select" or "rank"');
  } else {
    options = checkOptions(props.options, invalid);
    // A denied choice has no selection or ranking to write.
    if (onDeny === "continue") throw invalid(`onDeny "continue" does not apply to mode "${mode}" (a denial chooses nothing); use "fail" or "skip"`);
  }
  if (props.async !== undefined && typeof props.async !== "boolean") throw invalid("async must be true or false");
  checkDecisionSchema(mode, options, props, invalid);
  const spec: ApprovalSpec = { mode, request: props.request, onDeny, ...(options ? { options } : {}) };
  const { request: _r, onDeny: _o, mode: _m, options: _p, ...rest } = props;
  return makeElement(HOST.task, { ...rest, outputSchema: props.outputSchema ?? DEFAULT_APPROVAL_SCHEMA[mode], children: null, [APPROVAL_GATE]: spec });
}

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

const DURATION_UNITS_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "30s" -> 30000; undefined for anything else than a non-negative number followed by ms, s, m, h or d. */
export function parseDuration(text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/.exec(text.trim());
  return match ? Math.round(Number(match[1]) * DURATION_UNITS_MS[match[2]!]!) : undefined;
}

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

/** Alias of Loop, the name the Ralph-loop pattern is known by. */
export const Ralph = Loop;
