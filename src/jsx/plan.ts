/** The Plan: what render() produces from the element tree and the engine schedules. Plain data. */
import type { SandboxPolicy } from "./sandbox.ts";
import type { ScorersMap } from "../scorers/index.ts";
import type { TaskMemory } from "./memory.ts";
import type { z } from "zod";
import type { Agent } from "../agents/index.ts";
import type { OutputTarget } from "../db/index.ts";
import { codeMatches } from "../errors/index.ts";

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
   * The task's working directory, as an absolute path: its `<Worktree>`'s (created before the task
   * starts), else the run's root directory (`rootDir`, default process.cwd()).
   */
  cwd: string;
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

/**
 * A `<Worktree>`: its tasks run in the git worktree at `path` (relative paths resolve against the
 * run's root directory), created from the repository of that directory when missing.
 */
export type WorktreeSpec = {
  /** The `<Worktree id>`, when given (unique within a render). */
  id: string | undefined;
  path: string;
  /** The branch checked out there (created from `baseBranch` when it does not exist); omitted: a detached HEAD. */
  branch: string | undefined;
  /** What a new branch (or the detached HEAD) starts from; default `main` when that branch exists, else HEAD. */
  baseBranch: string | undefined;
};

/** How the wait between attempts grows: the same each time, by `initialDelayMs` each time, or doubling (by `factor`). */
export type RetryBackoff = "fixed" | "linear" | "exponential";

/**
 * The wait before each retry of a task. Without a policy a task backs off exponentially from 1 s;
 * a policy sets its own fields and leaves the others at `backoff: "fixed"`, `initialDelayMs: 0`
 * (no wait), `maxDelayMs` 5 min; `factor` (default 2) is the growth of exponential backoff, and
 * alone it implies `backoff: "exponential"`.
 */
export type RetryPolicy = { backoff?: RetryBackoff; initialDelayMs?: number; maxDelayMs?: number; factor?: number };

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
  /**
   * Retries after a failed attempt, checked at render (an integer >= 0 or Infinity; `noRetry`
   * makes it 0). Undefined: the engine's default for the task's mode.
   */
  retries: number | undefined;
  /** Checked at render; undefined: the engine's default backoff. */
  retryPolicy: RetryPolicy | undefined;
  /** Correction calls to an agent after a reply that fails the output schema; undefined: the agents' default (3). */
  maxSchemaRetries: number | undefined;
  timeoutMs: number | undefined;
  /** Process deaths (abandoned attempts) tolerated before the task fails with TASK_CRASH_LOOP. */
  maxAbandons: number;
  skip: boolean;
  continueOnFail: boolean;
  /** Node ids to wait for until each is over (finished, skipped or failed): `dependsOn`, plus those `needs` and `deps` name. */
  dependsOn: readonly string[];
  /**
   * A task with `deps` whose upstream rows are not all there yet: it waits for these node ids, and
   * if they end without a row (skipped, or failed under continueOnFail) the run fails with
   * DEPENDENCY_DEADLOCK. It never runs as rendered: once the rows exist the next render builds it.
   */
  unresolvedDeps?: readonly string[];
  label: string | undefined;
  meta: Record<string, unknown> | undefined;
  /** The innermost `<Worktree>` around the task: its working directory. */
  worktree?: WorktreeSpec;
  /** Set on compute, agent and static tasks whose output may come from `_smithers_cache`. */
  cache?: CacheSpec;
  /** The task's `sandbox` prop, else the innermost `<Sandbox>` around it: its compute body runs in bubblewrap. */
  sandbox?: SandboxPolicy;
  /** `<Task scorers>`, checked: run on each finished attempt, after it commits (see engine/run/scoring.ts). */
  scorers?: ScorersMap;
  /** `<Task groundTruth>`: what scorers compare the output with. */
  groundTruth?: unknown;
  /** `<Task context>`: extra material scorers get. */
  context?: unknown;
  /** An agent task's memory (its `memory` prop over its `<Memory>`): recalled into its prompt, its output retained. */
  memory?: TaskMemory;
  /** The key whose limits the task runs under (`concurrencyKey`, resolved at render). */
  concurrencyKey?: string;
};

export type PlanGroup = {
  kind: "sequence" | "parallel";
  /** A `<Parallel id>`: the group's stable id in frames (unique among the render's Parallels). */
  id?: string;
  /** A `<Sequence label>` or `<Parallel label>`: its display name. */
  label?: string;
  maxConcurrency: number | undefined;
  /** A Parallel's cap on direct children in flight (from their first task started until all are done). */
  subtreeConcurrency?: number;
  children: PlanNode[];
  /** Set on a `<Worktree>`: a sequence whose tasks run in that worktree. */
  worktree?: WorktreeSpec;
};

/**
 * A `<ContinueAsNew>`: once reached (what comes before it in its sequence is done), nothing new
 * starts; when nothing runs any more the run ends `continued` and a new run starts with `state`.
 */
export type PlanContinue = {
  kind: "continue-as-new";
  /** The JSON state handed over (undefined: none), checked serializable at render. */
  state: unknown;
  /** Its JSON size in bytes (0 without a state). */
  stateBytes: number;
};

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
  /**
   * After every this many iterations (counted from 0: after iterations N-1, 2N-1, …) the run ends
   * `continued` and a new run goes on with the next iteration, its loop state and latest outputs.
   */
  continueAsNewEvery: number | undefined;
  children: PlanNode[];
};

/**
 * A `<TryCatchFinally>`: `block` runs; if it fails (a failure whose code `catchErrors` lists, or
 * any when it is undefined) and a catch is mounted, `catch` runs instead of the failure going up;
 * `finally` runs after either. A catch given as a function of the error is mounted only once the
 * render sees the failure (`catchFn`).
 */
export type PlanTry = {
  kind: "try";
  id: string;
  catchErrors: readonly string[] | undefined;
  block: PlanGroup;
  catch: PlanGroup | undefined;
  /** The author's catch is a function of the error, so `catch` is mounted only after a failure. */
  catchFn: boolean;
  finally: PlanGroup | undefined;
};

/** One step of a `<Saga>`: its forward action, and what undoes it. */
export type PlanSagaStep = { id: string; label: string | undefined; action: PlanGroup; compensation: PlanGroup };

/**
 * A `<Saga>`: steps' actions in order; once one fails, the compensations of the steps whose action
 * completed run in reverse order (unless `onFailure` is "fail"), then the saga is done
 * ("compensate") or fails ("compensate-and-fail").
 */
export type PlanSaga = {
  kind: "saga";
  id: string;
  onFailure: "compensate" | "compensate-and-fail" | "fail";
  steps: PlanSagaStep[];
};

/** Whether a `<TryCatchFinally catchErrors>` catches a failure with `code` (undefined catches all; a code's former name counts). */
export function catchesCode(catchErrors: readonly string[] | undefined, code: string): boolean {
  return catchErrors === undefined || catchErrors.some((wanted) => codeMatches(code, wanted));
}

export type PlanNode = PlanTask | PlanGroup | PlanLoop | PlanTry | PlanSaga | PlanContinue;

/** The nodes directly under `node`, in document order (a try's and a saga's sections included). */
export function childNodes(node: PlanNode): readonly PlanNode[] {
  switch (node.kind) {
    case "task":
    case "continue-as-new":
      return [];
    case "try":
      return [node.block, ...(node.catch ? [node.catch] : []), ...(node.finally ? [node.finally] : [])];
    case "saga":
      return node.steps.flatMap((s) => [s.action, s.compensation]);
    default:
      return node.children;
  }
}

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
