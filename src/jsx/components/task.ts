/** `<Task>` and `<Subflow>`: the durable steps, each writing one validated row to its output table. */
import type { SandboxPolicy } from "../sandbox.ts";
import type { ScorersMap } from "../../scorers/index.ts";
import type { MemoryConfig } from "../memory.ts";
import type { z } from "zod";
import type { Agent } from "../../agents/index.ts";
import { makeElement, type SmithersElement } from "../element.ts";
import type { CachePolicy, OutputTarget, RetryPolicy, TaskRunContext } from "../plan.ts";
import { HOST, type DepsSpec, type RowOf } from "./host.ts";

type TaskValue<S> = S extends z.ZodType ? z.input<S> : Record<string, unknown>;

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
  /**
   * The key of the limits the task runs under (declared in createSmithers `limits` or by
   * `--limit`): its slots and rate window are shared by every run and process of the database.
   * The task waits `waiting-slot` or `waiting-rate` until it may start. A function is called
   * with the render's ctx. A key with no declared limit fails the run with LIMIT_UNDECLARED.
   * @example <Task id="review" output={outputs.review} agent={claude} concurrencyKey="anthropic">…</Task>
   */
  // biome-ignore lint/suspicious/noExplicitAny: ctx is the workflow's SmithersCtx, whatever its input type
  concurrencyKey?: string | ((ctx: any) => string);
  /**
   * Runs the compute body, or the CLI agent's process, in a bubblewrap sandbox under this policy
   * (`true`: the defaults, no network and a read-only file system but a fresh work dir); wins over
   * an enclosing `<Sandbox>`. An in-process (AI SDK) agent cannot be sandboxed: SANDBOX_POLICY_UNSUPPORTED.
   * See docs/guides/sandbox.md.
   */
  sandbox?: true | SandboxPolicy;
  /**
   * Scorers run on each finished attempt after its outcome commits, never delaying the task or the
   * run; results land in `_smithers_scorers` (`smithers scores RUN`). See docs/guides/scorers.md.
   * @example scorers={{ latency: { scorer: latencyScorer({ targetMs: 5000, maxMs: 30000 }) } }}
   */
  scorers?: ScorersMap;
  /** What the scorers compare the output with (ScorerInput.groundTruth); only with `scorers`. */
  groundTruth?: unknown;
  /** Extra material the scorers get (ScorerInput.context); only with `scorers`. */
  context?: unknown;
  /**
   * An agent task's memory: recalled into its prompt before it runs, its output retained. Replaces
   * its `<Memory>`'s configuration. See docs/guides/memory.md.
   */
  memory?: MemoryConfig;
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
