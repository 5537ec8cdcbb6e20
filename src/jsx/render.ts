/**
 * render(): element tree + persisted loop state -> Plan. Pure: the same inputs give the same
 * plan, so re-rendering after a crash places the run exactly where it was.
 */
import { z } from "zod";
import { SmithersError } from "../errors/index.ts";
import { cacheSpecOf, workflowDefaultCache } from "./cache-policy.ts";
import { APPROVAL_GATE, EVENT_WAIT, HOST, HUMAN_TASK, TIMER_SPEC } from "./components/index.ts";
import { COMPOSE_HOST, renderSaga, renderTry, type RenderSection, type SagaProps, type TryCatchFinallyProps } from "./compose.ts";
import { CONTINUE_AS_NEW_HOST, planContinue } from "./continue-as-new.ts";
import { WORKTREE_HOST, worktreeSpec } from "./worktree.ts";
import { SANDBOX_HOST, sandboxPolicy } from "./sandbox.ts";
import { MEMORY_HOST, mergeMemoryConfig, taskMemory } from "./memory.ts";
import { Fragment, isElement, type SmithersElement, type SmithersNode } from "./element.ts";
import { ACCEPTED_PROPS, checkProps } from "./props.ts";
import { isPromptElement, promptText } from "./prompt-text.ts";
import { renderContext } from "./render-context.ts";
import { describeSchema } from "../schema/index.ts";
import { atPath, isPlainProps, taskBase, withMode, type Scope, type TaskBase } from "./task-base.ts";
import type { ApprovalSpec, EventWaitSpec, HumanTaskSpec, TimerSpec, LoopState, Plan, PlanGroup, PlanLoop, PlanNode, PlanTask } from "./plan.ts";

export const DEFAULT_MAX_ITERATIONS = 5;

type RenderState = {
  loops: ReadonlyMap<string, LoopState>;
  taskIds: Set<string>;
  loopIds: Set<string>;
  worktreeIds: Set<string>;
  parallelIds: Set<string>;
  tasks: PlanTask[];
  planLoops: PlanLoop[];
  workflowName: string | undefined;
  /** `<Workflow cache>`: agent tasks without their own `cache` are cached by prompt. */
  workflowCache: boolean;
};

const invalid = (message: string, details: Record<string, unknown> = {}) => new SmithersError("INVALID_WORKFLOW", message, details);

const isZodObject = (value: unknown): value is z.ZodObject => value instanceof z.ZodObject;

/**
 * A task with `deps`: each dep (`key`, or the node id `needs[key]` names) is read from ctx as its
 * row (the current iteration's when it is in the same loop, else its latest). With every row
 * there (or with `depsOptional`, those there), a function child is called with them; until then
 * the task waits on them like dependsOn, and `unresolvedDeps` says which are missing.
 */
function resolveDeps(props: Record<string, unknown>): { children: unknown; unresolved: string[] } {
  const deps = props.deps as Record<string, unknown>;
  const named = props.needs as Record<string, string> | undefined;
  const ctx = renderContext();
  const rows: Record<string, unknown> = {};
  const unresolved: string[] = [];
  for (const [key, target] of Object.entries(deps)) {
    const nodeId = named?.[key] ?? key;
    const row = ctx?.outputMaybe(target, { nodeId });
    if (row === undefined) unresolved.push(nodeId);
    else rows[key] = row;
  }
  if (unresolved.length > 0 && !props.depsOptional) return { children: undefined, unresolved };
  const children = props.children;
  if (typeof children !== "function") return { children, unresolved: [] };
  // A declared async callback runs in the attempt, with the rows; a plain one now, at render.
  if (children.constructor.name === "AsyncFunction") return { children: () => (children as (d: unknown) => unknown)(rows), unresolved: [] };
  return { children: (children as (d: unknown) => unknown)(rows), unresolved: [] };
}

/** The marker props of the components that render to a Task host element (each checks its own props). */
const WRAPPED = [APPROVAL_GATE, EVENT_WAIT, HUMAN_TASK, TIMER_SPEC];

function taskFromProps(props: Record<string, unknown>, scope: Scope, workflowCache: boolean): PlanTask {
  const id = props.id;
  if (typeof id !== "string" || id.length === 0) throw invalid("Every <Task> needs a non-empty string id");
  if (WRAPPED.every((marker) => props[marker] === undefined)) checkProps("Task", props, ACCEPTED_PROPS.Task);
  // A timer writes no row, so it has no output table.
  if (props[TIMER_SPEC] !== undefined) return withMode(taskBase(id, props, scope), "timer", { output: "", timer: props[TIMER_SPEC] as TimerSpec });
  if (props.output === undefined || props.output === null) {
    throw new SmithersError("MISSING_OUTPUT", `<Task id="${id}"> has no output; pass output={outputs.<key>}`, { nodeId: id });
  }
  const children = props.children;
  const base = taskBase(id, props, scope);
  if (props[APPROVAL_GATE] !== undefined) return withMode(base, "approval", { approval: props[APPROVAL_GATE] as ApprovalSpec });
  if (props[EVENT_WAIT] !== undefined) return withMode(base, "event", { event: props[EVENT_WAIT] as EventWaitSpec });
  if (props[HUMAN_TASK] !== undefined) return withMode(base, "human", { human: props[HUMAN_TASK] as HumanTaskSpec });
  if (props.needsApproval !== undefined && typeof props.needsApproval !== "boolean") {
    throw invalid(`<Task id="${id}"> needsApproval must be true or false`, { nodeId: id });
  }
  if (props.async !== undefined && props.needsApproval !== true) {
    throw invalid(`<Task id="${id}"> async only applies to nodes that wait (needsApproval, an Approval, HumanTask, Signal or WaitForEvent)`, {
      nodeId: id,
    });
  }
  if (props.depsOptional !== undefined && props.deps === undefined) {
    throw invalid(`<Task id="${id}"> depsOptional only applies with deps`, { nodeId: id, prop: "depsOptional" });
  }
  let work = children;
  if (props.deps !== undefined) {
    const resolved = resolveDeps(props);
    // Until its deps have rows the task cannot know its prompt or value: it waits (see the scheduler), and never runs as is.
    if (resolved.unresolved.length > 0) return withMode(base, "compute", { compute: depsNeverResolved(id), unresolvedDeps: resolved.unresolved });
    work = resolved.children;
  }
  const built = withMemory(id, props, scope, workTask(id, work, base, props.outputSchema ?? props.output));
  // A recalled block can change while prompt and agent do not: a task with memory is never served from the cache.
  if (built.memory && props.cache !== undefined) {
    throw invalid(`<Task id="${id}"> has memory and cache: its recalled context can change, so a cached output would be stale`, { nodeId: id, prop: "cache" });
  }
  const cache = props.cache !== undefined ? cacheSpecOf(id, props.cache) : workflowCache && !built.memory ? workflowDefaultCache(built) : undefined;
  const task = cache ? { ...built, cache } : built;
  return props.needsApproval === true ? { ...task, approval: gateSpec(task) } : task;
}

/**
 * The task's `memory` prop (which replaces its `<Memory>`'s), else its `<Memory>`'s. `<Memory>` gives
 * memory to the agent tasks inside it; a `memory` prop on any other task is refused.
 */
function withMemory(id: string, props: Record<string, unknown>, scope: Scope, task: PlanTask): PlanTask {
  const where = `<Task id="${id}">`;
  if (props.memory !== undefined && task.mode !== "agent") {
    throw new SmithersError("MEMORY_NOT_CONFIGURED", `${where} memory applies to an agent task (its prompt); this is a ${task.mode} task`, {
      nodeId: id,
      prop: "memory",
    });
  }
  if (task.mode !== "agent") return task;
  const config = props.memory !== undefined ? mergeMemoryConfig(where, props.memory, undefined) : scope.memory;
  return config ? { ...task, memory: taskMemory(where, config) } : task;
}

const depsNeverResolved = (id: string) => () => {
  throw new SmithersError("DEPENDENCY_DEADLOCK", `Task "${id}" started before its deps had rows`, { nodeId: id });
};

/** A compute, agent or static task from its children. */
function workTask(id: string, children: unknown, base: TaskBase, schema: unknown): PlanTask {
  if (typeof children === "function") {
    // A function child is a compute step: an agent beside it would be ignored, so it is refused.
    if (base.agent) {
      throw invalid(
        `<Task id="${id}"> has an agent and a function child; an agent takes a prompt: a string, JSX, or a plain (not async) deps callback returning one`,
        { nodeId: id, prop: "agent" },
      );
    }
    return withMode(base, "compute", { compute: children as PlanTask["compute"] });
  }
  if (isPromptElement(children)) {
    if (!base.agent) throw invalid(`<Task id="${id}"> has a JSX prompt but no agent; pass agent={...}`, { nodeId: id });
    const described = isZodObject(schema) ? { schema: describeSchema(schema) } : {};
    return withMode(base, "agent", { prompt: promptText(children, id, described) });
  }
  const textParts = Array.isArray(children) ? children : [children];
  if (textParts.length > 0 && textParts.every((c) => typeof c === "string" || typeof c === "number")) {
    if (!base.agent) {
      throw invalid(`<Task id="${id}"> has a prompt but no agent; pass agent={...} or give a function or object`, { nodeId: id });
    }
    return withMode(base, "agent", { prompt: textParts.join("") });
  }
  if (isPlainProps(children)) return withMode(base, "static", { staticValue: children });
  throw invalid(`<Task id="${id}"> children must be a prompt string (with agent), a function, or a plain object`, { nodeId: id });
}

/** What the approver of a `<Task needsApproval>` is shown: the task, and its prompt when it has one. */
function gateSpec(task: PlanTask): ApprovalSpec {
  const summary = task.prompt === undefined ? undefined : task.prompt.length > 2000 ? `${task.prompt.slice(0, 2000)}…` : task.prompt;
  return {
    mode: "gate",
    request: {
      title: `Start task "${task.label ?? task.nodeId}"?`,
      ...(summary === undefined ? {} : { summary }),
      ...(task.meta ? { metadata: task.meta } : {}),
    },
    onDeny: "fail",
  };
}

function subflowFromProps(props: Record<string, unknown>, scope: Scope): PlanTask {
  const id = props.id;
  if (typeof id !== "string" || id.length === 0) throw invalid("Every <Subflow> needs a non-empty string id");
  checkProps("Subflow", props, ACCEPTED_PROPS.Subflow);
  if (props.children !== undefined && props.children !== null) {
    throw invalid(`<Subflow id="${id}"> takes no children`, { nodeId: id, prop: "children" });
  }
  if (props.mode !== undefined && props.mode !== "childRun") {
    throw invalid(`<Subflow id="${id}"> mode "${String(props.mode)}" is not supported; only "childRun"`, { nodeId: id, prop: "mode" });
  }
  const workflow = props.workflow as { kind?: unknown } | null | undefined;
  if (typeof workflow !== "object" || workflow === null || workflow.kind !== "smithers.workflow") {
    throw invalid(`<Subflow id="${id}"> workflow must be a workflow (the value smithers(build) returns); file references are not supported`, {
      nodeId: id,
      prop: "workflow",
    });
  }
  if (props.output === undefined || props.output === null) {
    throw new SmithersError("MISSING_OUTPUT", `<Subflow id="${id}"> has no output; pass output={outputs.<key>}`, { nodeId: id });
  }
  return withMode(taskBase(id, props, scope, "Subflow"), "subflow", { outputSchema: undefined, subflow: { workflow, input: props.input } });
}

/** `<Loop continueAsNewEvery>`: a positive integer, or undefined when not given. */
function continueEvery(loopId: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1) {
    throw invalid(`<Loop id="${loopId}"> continueAsNewEvery must be a positive whole number of iterations`, { loopId, prop: "continueAsNewEvery" });
  }
  return value;
}

/** Flattens children (arrays, fragments, components, conditionals) to host elements. */
function hostChildren(node: SmithersNode, scope: Scope, out: { element: SmithersElement; scope: Scope }[]): void {
  if (node === null || node === undefined || typeof node === "boolean") return;
  if (typeof node === "string" || typeof node === "number") {
    if (String(node).trim() === "") return;
    throw invalid(`Text "${String(node).slice(0, 40)}" can only appear inside a <Task>`);
  }
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) {
      const child = node[i] as SmithersNode;
      // The child's path: its index, then its key when it has one (one scope object per element).
      if (isElement(child) && child.key !== null && typeof child.type !== "function" && child.type !== Fragment) {
        out.push({ element: child, scope: atPath(scope, `${scope.path}.${i}[${child.key}]`) });
      } else hostChildren(child, atPath(scope, `${scope.path}.${i}`), out);
    }
    return;
  }
  if (!isElement(node)) throw invalid(`Unexpected value in the workflow tree: ${typeof node}`);
  const keyed = node.key === null ? scope : atPath(scope, `${scope.path}[${node.key}]`);
  if (node.type === Fragment) {
    hostChildren((node.props as { children?: SmithersNode }).children, keyed, out);
  } else if (typeof node.type === "function") {
    hostChildren(node.type(node.props), keyed, out);
  } else {
    out.push({ element: node, scope: keyed });
  }
}

function renderChildren(children: SmithersNode, scope: Scope, state: RenderState): PlanNode[] {
  const hosts: { element: SmithersElement; scope: Scope }[] = [];
  hostChildren(children, scope, hosts);
  return hosts.map(({ element, scope: s }) => renderHost(element, s, state));
}

/** A try's or a saga's section (block, catch, action…) as a sequence of its children. */
function sectionRenderer(scope: Scope, state: RenderState): RenderSection {
  return (node, suffix) => ({
    kind: "sequence",
    maxConcurrency: undefined,
    children: renderChildren(node, { ...scope, path: `${scope.path}${suffix}` }, state),
  });
}

/** A group's `id` (Parallel only, unique among the render's Parallels) and `label`, checked. */
function groupNames(component: "Sequence" | "Parallel", props: Record<string, unknown>, state: RenderState): { id?: string; label?: string } {
  const { id, label } = props;
  if (label !== undefined && typeof label !== "string") throw invalid(`<${component}> label must be a string`, { prop: "label" });
  if (id === undefined) return label === undefined ? {} : { label };
  if (typeof id !== "string" || id === "") throw invalid(`<${component}> id must be a non-empty string`, { prop: "id" });
  if (state.parallelIds.has(id)) throw new SmithersError("DUPLICATE_ID", `Two <Parallel>s share the id "${id}" in one render`, { parallelId: id });
  state.parallelIds.add(id);
  return label === undefined ? { id } : { id, label };
}

function renderHost(element: SmithersElement, scope: Scope, state: RenderState): PlanNode {
  const props = element.props as Record<string, unknown>;
  const children = props.children as SmithersNode;
  switch (element.type) {
    case HOST.task:
    case HOST.subflow: {
      const task = element.type === HOST.task ? taskFromProps(props, scope, state.workflowCache) : subflowFromProps(props, scope);
      if (state.taskIds.has(task.nodeId)) {
        throw new SmithersError("DUPLICATE_ID", `Two tasks share the id "${task.nodeId}" in one render; task ids must be unique`, {
          nodeId: task.nodeId,
        });
      }
      state.taskIds.add(task.nodeId);
      state.tasks.push(task);
      return task;
    }
    case HOST.sequence:
      checkProps("Sequence", props, ACCEPTED_PROPS.Sequence);
      return { kind: "sequence", maxConcurrency: undefined, ...groupNames("Sequence", props, state), children: renderChildren(children, scope, state) };
    case HOST.parallel: {
      checkProps("Parallel", props, ACCEPTED_PROPS.Parallel);
      const names = groupNames("Parallel", props, state);
      const max = props.maxConcurrency;
      const subtree = props.subtreeConcurrency;
      if (subtree !== undefined && !(typeof subtree === "number" && Number.isInteger(subtree) && subtree >= 1)) {
        throw invalid(`<Parallel> subtreeConcurrency must be an integer of 1 or more, got ${JSON.stringify(subtree)}`, { prop: "subtreeConcurrency" });
      }
      return {
        kind: "parallel",
        ...names,
        maxConcurrency: typeof max === "number" && max > 0 ? Math.floor(max) : undefined,
        ...(subtree === undefined ? {} : { subtreeConcurrency: subtree }),
        children: renderChildren(children, scope, state),
      };
    }
    case HOST.loop: {
      checkProps("Loop", props, ACCEPTED_PROPS.Loop);
      if (scope.loop) throw invalid(`A <Loop> inside <Loop id="${scope.loop.id}"> is not supported; flatten the loops`);
      const loopId = typeof props.id === "string" && props.id ? props.id : `loop${scope.path}`;
      if (state.loopIds.has(loopId)) {
        throw new SmithersError("DUPLICATE_ID", `Two loops share the id "${loopId}" in one render`, { loopId });
      }
      state.loopIds.add(loopId);
      const persisted = state.loops.get(loopId);
      const iteration = persisted?.iteration ?? 0;
      const maxIterations = typeof props.maxIterations === "number" ? Math.max(1, props.maxIterations) : DEFAULT_MAX_ITERATIONS;
      const loop: PlanLoop = {
        kind: "loop",
        loopId,
        iteration,
        until: Boolean(props.until),
        done: Boolean(persisted?.done),
        maxIterations,
        onMaxReached: props.onMaxReached === "fail" ? "fail" : "return-last",
        continueAsNewEvery: continueEvery(loopId, props.continueAsNewEvery),
        children: renderChildren(children, { ...scope, loop: { id: loopId, iteration } }, state),
      };
      state.planLoops.push(loop);
      return loop;
    }
    case COMPOSE_HOST.tryCatch:
      return renderTry(props as TryCatchFinallyProps, scope.path, sectionRenderer(scope, state));
    case COMPOSE_HOST.saga: {
      const hosts = (node: SmithersNode) => {
        const out: { element: SmithersElement; scope: Scope }[] = [];
        hostChildren(node, scope, out);
        return out.map((h) => h.element);
      };
      return renderSaga(props as SagaProps, scope.path, sectionRenderer(scope, state), hosts);
    }
    case COMPOSE_HOST.sagaStep:
      throw invalid("<Saga.Step> may only appear directly inside a <Saga>");
    case CONTINUE_AS_NEW_HOST:
      return planContinue(props);
    case WORKTREE_HOST: {
      const worktree = worktreeSpec(props);
      if (worktree.id !== undefined) {
        if (state.worktreeIds.has(worktree.id))
          throw new SmithersError("DUPLICATE_ID", `Two worktrees share the id "${worktree.id}" in one render`, { worktreeId: worktree.id });
        state.worktreeIds.add(worktree.id);
      }
      return { kind: "sequence", maxConcurrency: undefined, children: renderChildren(children, { ...scope, worktree }, state), worktree };
    }
    case SANDBOX_HOST: {
      const { children: _children, skipIf: _skipIf, ...policy } = props;
      const sandbox = sandboxPolicy("<Sandbox>", policy);
      return { kind: "sequence", maxConcurrency: undefined, children: renderChildren(children, { ...scope, sandbox }, state) };
    }
    case MEMORY_HOST: {
      const { children: _children, skipIf: _skipIf, ...config } = props;
      const memory = mergeMemoryConfig("<Memory>", config, scope.memory);
      return { kind: "sequence", maxConcurrency: undefined, children: renderChildren(children, { ...scope, memory }, state) };
    }
    case HOST.workflow:
      throw invalid("<Workflow> may only appear at the root");
    default:
      throw invalid(`Unknown element <${String(element.type)}>`);
  }
}

/** Turns the element returned by a workflow's build function into a Plan. */
export function render(root: SmithersNode, loops: ReadonlyMap<string, LoopState> = new Map()): Plan {
  const state: RenderState = {
    loops,
    taskIds: new Set(),
    loopIds: new Set(),
    worktreeIds: new Set(),
    parallelIds: new Set(),
    tasks: [],
    planLoops: [],
    workflowName: undefined,
    workflowCache: false,
  };
  const hosts: { element: SmithersElement; scope: Scope }[] = [];
  hostChildren(root, { path: "", loop: undefined }, hosts);
  const top = hosts[0];
  if (hosts.length !== 1 || !top || top.element.type !== HOST.workflow) {
    throw invalid("A workflow must render exactly one <Workflow name=...> at the root");
  }
  const props = top.element.props as { name?: unknown; cache?: unknown; children?: SmithersNode };
  checkProps("Workflow", props, ACCEPTED_PROPS.Workflow);
  if (typeof props.name !== "string" || props.name === "") throw invalid("<Workflow> needs a name");
  if (props.cache !== undefined && typeof props.cache !== "boolean") {
    throw invalid("<Workflow> cache must be true or false (per-task policies go on <Task cache>)", { prop: "cache" });
  }
  state.workflowCache = props.cache === true;
  const root_: PlanGroup = { kind: "sequence", maxConcurrency: undefined, children: renderChildren(props.children, top.scope, state) };
  return { workflowName: props.name, root: root_, tasks: state.tasks, loops: state.planLoops };
}
