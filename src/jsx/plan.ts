/** The Plan: what render() produces from the element tree and the engine schedules. Plain data. */
import type { z } from "zod";
import type { Agent } from "../agents/index.ts";
import type { OutputTarget } from "../db/index.ts";

// One definition, in the registry that resolves it; re-exported for the components' props.
export type { OutputTarget };

/** What a compute task's function receives. */
export type TaskRunContext = {
  runId: string;
  nodeId: string;
  iteration: number;
  attempt: number;
  /** `runId:nodeId:iteration`: stable across attempts and resumes, for external side effects. */
  idempotencyKey: string;
  signal: AbortSignal;
  input: unknown;
  /**
   * Runs an irreversible call at most once per task across retries and resumes: the intent and
   * the result are recorded in `_smithers_tool_calls`; a recorded result is returned without
   * calling again. `call.key` is the idempotency key to hand to the external system;
   * `call.uncertain` says an earlier attempt died between intent and result.
   * @example
   * await ctx.sideEffect("charge", ({ key }) => payments.charge({ amount, idempotencyKey: key }));
   */
  sideEffect: <T>(name: string, fn: (call: { key: string; uncertain: boolean }) => T | Promise<T>, options?: { input?: unknown }) => Promise<T>;
};

/** A `<Timer>`: exactly one of a duration from when it starts, or an absolute time. */
export type TimerSpec = { durationMs: number; untilMs?: undefined } | { untilMs: number; durationMs?: undefined };

/** A choice offered by a `select` or `rank` approval. */
export type ApprovalOption = { key: string; label: string; summary?: string; metadata?: Record<string, unknown> };

/**
 * A person's decision before the node goes on. `approve`, `select` and `rank` are `<Approval>`
 * nodes whose decision is their output row; `gate` is a `<Task needsApproval>`: once approved
 * the task itself runs, and nothing of the decision is written to its table.
 */
export type ApprovalSpec = {
  mode: "approve" | "select" | "rank" | "gate";
  request: { title: string; summary?: string; metadata?: Record<string, unknown> };
  /** The choices of a `select` or `rank` approval (keys unique, at least one). */
  options?: readonly ApprovalOption[];
  /** A denial fails the node (default), writes the decision row and goes on (`continue`), or skips the node. */
  onDeny: "fail" | "continue" | "skip";
};

/** A `<WaitForEvent>` or `<Signal>`: the node waits for a signal of that name, then stores its payload. */
export type EventWaitSpec = {
  /** The signal name it takes. */
  event: string;
  /** When set, only signals sent with this correlation id match; when not, any signal of the name does. */
  correlationId: string | undefined;
  /** What the payload must satisfy (the output schema unless `outputSchema` narrows it). */
  payloadSchema: z.ZodType | undefined;
  /** How long it waits from when it starts; no deadline when undefined. */
  timeoutMs: number | undefined;
  /** What a timeout does: fail the node (default), skip it, or (with `tagged`) store `{ kind: "timeout" }`. */
  onTimeout: "fail" | "skip" | "continue";
  /** The row is `{ kind: "signal", payload }` or `{ kind: "timeout" }` instead of the payload itself. */
  tagged: boolean;
};

/** A `<HumanTask>`: a person answers with JSON matching the output schema. */
export type HumanTaskSpec = {
  prompt: string;
  /** Answers that fail the schema are asked again, at most this many asks in all (default 10). */
  maxAttempts: number;
  /** How long each ask stays open; no deadline when undefined. */
  timeoutMs: number | undefined;
};

export type RetryPolicy = { initialDelayMs?: number; maxDelayMs?: number; factor?: number };

/** Which runs share a cached output: this run only, every run of the workflow, every workflow. */
export type CacheScope = "run" | "workflow" | "global";

/**
 * What `cache.by` receives: the run's ctx as the build function sees it, for the task's
 * iteration, and the task's node id. Outputs read through it must exist (`output` throws).
 */
export type CacheKeyContext = {
  runId: string;
  nodeId: string;
  iteration: number;
  // biome-ignore lint/suspicious/noExplicitAny: as in smithers-orchestrator, `by: (ctx) => ctx.input.repo` compiles without a cast
  input: any;
  output<T = Record<string, unknown>>(target: OutputTarget, key: { nodeId: string; iteration?: number }): T;
  outputMaybe<T = Record<string, unknown>>(target: OutputTarget, key: { nodeId: string; iteration?: number }): T | undefined;
  latest<T = Record<string, unknown>>(target: OutputTarget, nodeId: string): T | undefined;
  iterationCount(target: OutputTarget, nodeId: string): number;
};

/** A task's `cache` prop (see TaskProps.cache). */
export type CachePolicy = {
  /** The value the output depends on (any JSON); its stable JSON is part of the key. */
  by?: (ctx: CacheKeyContext) => unknown;
  /** Bump it to drop every entry the task wrote before. */
  version?: string | number;
  /** Entries are shared by the tasks with the same key (in the scope) instead of by node id. */
  key?: string;
  /** An entry older than this is a miss (and is replaced). */
  ttlMs?: number;
  /** Default "workflow". */
  scope?: CacheScope;
};

/** A task's cache policy as render checked it (or the `<Workflow cache>` default of an agent task). */
export type CacheSpec = {
  by: ((ctx: CacheKeyContext) => unknown) | undefined;
  version: string | number | undefined;
  key: string | undefined;
  ttlMs: number | undefined;
  scope: CacheScope;
};

export type PlanTask = {
  kind: "task";
  nodeId: string;
  iteration: number;
  /** `nodeId#iteration`: the task's key in node-state maps. */
  key: string;
  loopId: string | undefined;
  output: OutputTarget;
  outputSchema: z.ZodObject | undefined;
  mode: "static" | "compute" | "agent" | "approval" | "subflow" | "timer" | "event" | "human";
  /** mode "timer": when it fires, relative to its start or absolute. It writes no output row. */
  timer?: TimerSpec;
  /**
   * mode "approval": what the approver is shown, and what a denial does. On a compute, agent or
   * static task (`needsApproval`, mode "gate"): the task starts only once a person approved it.
   */
  approval?: ApprovalSpec;
  /** mode "event": the signal it waits for. */
  event?: EventWaitSpec;
  /** mode "human": what the person is asked. */
  human?: HumanTaskSpec;
  /**
   * For a node that waits for the world (approval, human task, signal): only what depends on it
   * waits. Without it, no new task starts anywhere in the run while it waits.
   */
  async: boolean;
  staticValue?: unknown;
  compute?: (ctx: TaskRunContext) => unknown;
  prompt?: string;
  /** mode "subflow": the child workflow (a SmithersWorkflow, checked at render) and its input. */
  subflow?: { workflow: unknown; input: unknown };
  agent?: Agent | readonly Agent[];
  retries: number;
  retryPolicy: RetryPolicy | undefined;
  timeoutMs: number | undefined;
  /** Process deaths (abandoned attempts) tolerated before the task fails with TASK_CRASH_LOOP. */
  maxAbandons: number;
  skip: boolean;
  continueOnFail: boolean;
  dependsOn: readonly string[];
  label: string | undefined;
  meta: Record<string, unknown> | undefined;
  /** Set on compute, agent and static tasks whose output may come from `_smithers_cache`. */
  cache?: CacheSpec;
};

export type PlanGroup = { kind: "sequence" | "parallel"; maxConcurrency: number | undefined; children: PlanNode[] };

export type PlanLoop = {
  kind: "loop";
  loopId: string;
  iteration: number;
  /** The author's `until` as rendered now. */
  until: boolean;
  /** Persisted: the loop has completed and its children no longer run. */
  done: boolean;
  maxIterations: number;
  onMaxReached: "fail" | "return-last";
  children: PlanNode[];
};

export type PlanNode = PlanTask | PlanGroup | PlanLoop;

export type Plan = {
  workflowName: string;
  root: PlanGroup;
  /** Every mounted task in document order. */
  tasks: PlanTask[];
  loops: PlanLoop[];
};

/** Persisted loop progress the renderer needs (from `_smithers_ralph`). */
export type LoopState = { iteration: number; done: boolean };

/** A task whose process died this many times while running it fails instead of being resumed again. */
export const DEFAULT_MAX_ABANDONS = 3;

export const nodeKey = (nodeId: string, iteration: number) => `${nodeId}#${iteration}`;
