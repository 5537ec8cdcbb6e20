/**
 * The fields every kind of task takes from its props and its place in the tree (`taskBase`), and
 * the task made from them with its mode (`withMode`): what render.ts builds for each `<Task>` and
 * `<Subflow>`. Built field by field rather than from spreads: a render of a wide workflow builds
 * one per task.
 */
import { isPlainObject } from "../json/index.ts";
import { SmithersError } from "../errors/index.ts";
import { scorerProps } from "../scorers/index.ts";
import { isElement } from "./element.ts";
import type { MemoryConfig } from "./memory.ts";
import { DEFAULT_MAX_ABANDONS, nodeKey, type PlanTask, type WorktreeSpec } from "./plan.ts";
import { renderContext } from "./render-context.ts";
import { retryPropsOf } from "./retry-props.ts";
import { sandboxPolicy, type SandboxPolicy } from "./sandbox.ts";

const invalid = (message: string, details: Record<string, unknown> = {}) => new SmithersError("INVALID_WORKFLOW", message, details);

/** A plain object that is not a JSX element (an element is a plain object too). */
export const isPlainProps = (value: unknown): value is Record<string, unknown> => isPlainObject(value) && !isElement(value);

/** Where an element sits: its tree path, its loop, and the innermost `<Worktree>` around it. */
export type Scope = {
  path: string;
  loop: { id: string; iteration: number } | undefined;
  worktree?: WorktreeSpec;
  sandbox?: SandboxPolicy;
  /** The innermost `<Memory>`'s configuration, merged with those around it. */
  memory?: MemoryConfig;
};

function maxAbandonsOf(id: string, value: unknown): number {
  if (value === undefined) return DEFAULT_MAX_ABANDONS;
  if (typeof value !== "number" || !(value >= 1) || (Number.isFinite(value) && !Number.isInteger(value))) {
    throw invalid(`<Task id="${id}"> maxAbandons must be a positive integer or Infinity`, { nodeId: id });
  }
  return value;
}

/** A task's fields before its mode: what every kind of task takes from its props and scope. */
export type TaskBase = Omit<PlanTask, "mode">;

/**
 * Built field by field rather than from spreads: a render of a wide workflow builds one per task,
 * and the optional fields are set only when present, as the plan has always had them.
 */
export function taskBase(id: string, props: Record<string, unknown>, scope: Scope, component: "Task" | "Subflow" = "Task"): TaskBase {
  const iteration = scope.loop?.iteration ?? 0;
  const retry = retryPropsOf(component, id, props);
  const base: TaskBase = {
    kind: "task",
    nodeId: id,
    iteration,
    key: nodeKey(id, iteration),
    loopId: scope.loop?.id,
    output: props.output as PlanTask["output"],
    outputSchema: props.outputSchema as PlanTask["outputSchema"],
    agent: agentsOf(props),
    retries: retry.retries,
    retryPolicy: retry.retryPolicy,
    maxSchemaRetries: retry.maxSchemaRetries,
    timeoutMs: typeof props.timeoutMs === "number" ? props.timeoutMs : undefined,
    maxAbandons: maxAbandonsOf(id, props.maxAbandons),
    skip: Boolean(props.skipIf),
    continueOnFail: Boolean(props.continueOnFail),
    dependsOn: dependsOnOf(id, props),
    label: props.label as string | undefined,
    meta: props.meta as Record<string, unknown> | undefined,
    async: Boolean(props.async),
  };
  if (scope.worktree) base.worktree = scope.worktree;
  const sandbox = props.sandbox !== undefined ? sandboxPolicy(`<Task id="${id}">`, props.sandbox) : scope.sandbox;
  if (sandbox) base.sandbox = sandbox;
  if (props.scorers !== undefined || props.groundTruth !== undefined || props.context !== undefined) Object.assign(base, scorerProps(id, props));
  if (props.concurrencyKey !== undefined) base.concurrencyKey = concurrencyKeyOf(id, props.concurrencyKey);
  return base;
}

/** The task: `base` with its mode and what that mode carries (base is the render's own object). */
export function withMode<M extends PlanTask["mode"]>(base: TaskBase, mode: M, fields?: Partial<PlanTask>): PlanTask {
  const task = base as PlanTask;
  task.mode = mode;
  if (fields) Object.assign(task, fields);
  return task;
}

/** `concurrencyKey`: a string, or a function of the render's ctx returning one (the engine checks it has a limit). */
function concurrencyKeyOf(id: string, value: unknown): string {
  const key = typeof value === "function" ? (value as (ctx: unknown) => unknown)(renderContext()) : value;
  if (typeof key !== "string" || key === "") {
    throw new SmithersError(
      "INVALID_LIMIT",
      `<Task id="${id}"> concurrencyKey must be a non-empty string (or a function of ctx returning one), got ${JSON.stringify(key) ?? String(key)}`,
      {
        nodeId: id,
      },
    );
  }
  return key;
}

/** `agent`, with `fallbackAgent` (the peer's prop) tried after it. */
function agentsOf(props: Record<string, unknown>): PlanTask["agent"] {
  const agent = props.agent as PlanTask["agent"];
  if (props.fallbackAgent === undefined) return agent;
  const primary = agent === undefined ? [] : Array.isArray(agent) ? agent : [agent];
  return [...primary, props.fallbackAgent as NonNullable<PlanTask["agent"]> extends readonly (infer A)[] ? A : never];
}

/** dependsOn, plus the node ids `needs` and `deps` name (they order execution the same way). */
function dependsOnOf(id: string, props: Record<string, unknown>): readonly string[] {
  const listed = (props.dependsOn as string[] | undefined) ?? [];
  const { needs, deps } = props;
  if (needs === undefined && deps === undefined) return listed;
  if (needs !== undefined && (!isPlainProps(needs) || Object.values(needs).some((v) => typeof v !== "string" || v === ""))) {
    throw invalid(`<Task id="${id}"> needs must map names to node ids, like needs={{ config: "load-config" }}`, { nodeId: id, prop: "needs" });
  }
  if (deps !== undefined && (!isPlainProps(deps) || Object.keys(deps).length === 0)) {
    throw invalid(`<Task id="${id}"> deps must map upstream task ids to their outputs, like deps={{ analyze: outputs.analysis }}`, {
      nodeId: id,
      prop: "deps",
    });
  }
  const named = needs as Record<string, string> | undefined;
  const ids = [...Object.values(named ?? {}), ...Object.keys(deps ?? {}).map((key) => named?.[key] ?? key)];
  return [...new Set([...listed, ...ids])];
}

/** `scope` at another path: built field by field (once per element of a render, so no spread). */
export function atPath(scope: Scope, path: string): Scope {
  const at: Scope = { path, loop: scope.loop };
  if (scope.worktree) at.worktree = scope.worktree;
  if (scope.sandbox) at.sandbox = scope.sandbox;
  if (scope.memory) at.memory = scope.memory;
  return at;
}
