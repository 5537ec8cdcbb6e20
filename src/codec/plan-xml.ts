/** planToXml: a rendered Plan as a frame tree, plus where each task's element sits in it. */
import type { Plan, PlanGroup, PlanNode, PlanSaga, PlanTask, PlanTry } from "../jsx/index.ts";
import type { PropValue, XmlElement } from "./tree.ts";

export type PlanXmlOptions = {
  /** The output table each task writes to. */
  tableOf: (task: PlanTask) => string;
  /** The task's node state ("pending", "running", "finished", …); undefined means "pending". */
  stateOf?: (task: PlanTask) => string | undefined;
};

export type PlanXml = {
  root: XmlElement;
  /** nodeKey(nodeId, iteration) -> path of that task's element, for `set` ops on its state. */
  taskPaths: Map<string, number[]>;
};

/**
 * Props worth showing: defined, and not the default `false`. A non-finite number (say
 * `maxConcurrency={Infinity}`) means "no limit", the same as leaving the prop out, and no JSON
 * value can hold it: it is left out.
 */
function shown(value: PropValue | undefined): value is PropValue {
  return value !== undefined && value !== false && (typeof value !== "number" || Number.isFinite(value));
}

function props(entries: Record<string, PropValue | undefined>): Record<string, PropValue> {
  const out: Record<string, PropValue> = {};
  for (const name in entries) {
    const value = entries[name];
    if (shown(value)) out[name] = value;
  }
  return out;
}

// Written prop by prop in the element's order, with props()'s rule: a frame of a large run has one
// of these per task, and an intermediate object of every candidate prop would double its garbage.
function taskElement(task: PlanTask, options: PlanXmlOptions): XmlElement {
  const out: Record<string, PropValue> = { id: task.nodeId };
  if (shown(task.iteration)) out.iteration = task.iteration;
  out.state = options.stateOf?.(task) ?? "pending";
  out.output = options.tableOf(task);
  if (shown(task.mode)) out.mode = task.mode;
  if (shown(task.label)) out.label = task.label;
  if (task.retries !== undefined && task.retries > 0 && shown(task.retries)) out.retries = task.retries;
  if (shown(task.timeoutMs)) out.timeoutMs = task.timeoutMs;
  if (task.skip) out.skip = true;
  if (task.continueOnFail) out.continueOnFail = true;
  if (task.dependsOn.length > 0) out.dependsOn = [...task.dependsOn];
  return { tag: "task", props: out, children: [] };
}

/** A try's or a saga's section (`<try>`, `<catch>`, `<action>`…): the group's children under that tag. */
function sectionElement(tag: string, group: PlanGroup, path: number[], options: PlanXmlOptions, taskPaths: Map<string, number[]>): XmlElement {
  return { tag, props: {}, children: group.children.map((child, i) => nodeElement(child, [...path, i], options, taskPaths)) };
}

function tryElement(node: PlanTry, path: number[], options: PlanXmlOptions, taskPaths: Map<string, number[]>): XmlElement {
  const sections: [string, PlanGroup | undefined][] = [
    ["try", node.block],
    ["catch", node.catch],
    ["finally", node.finally],
  ];
  const children: XmlElement[] = [];
  for (const [tag, group] of sections) if (group) children.push(sectionElement(tag, group, [...path, children.length], options, taskPaths));
  return { tag: "try-catch-finally", props: props({ id: node.id, catchErrors: node.catchErrors ? [...node.catchErrors] : undefined }), children };
}

function sagaElement(node: PlanSaga, path: number[], options: PlanXmlOptions, taskPaths: Map<string, number[]>): XmlElement {
  const children = node.steps.map((step, i) => ({
    tag: "step",
    props: props({ id: step.id, label: step.label }),
    children: [
      sectionElement("action", step.action, [...path, i, 0], options, taskPaths),
      sectionElement("compensation", step.compensation, [...path, i, 1], options, taskPaths),
    ],
  }));
  return { tag: "saga", props: props({ id: node.id, onFailure: node.onFailure }), children };
}

function nodeElement(node: PlanNode, path: number[], options: PlanXmlOptions, taskPaths: Map<string, number[]>): XmlElement {
  if (node.kind === "task") {
    taskPaths.set(node.key, path);
    return taskElement(node, options);
  }
  if (node.kind === "try") return tryElement(node, path, options, taskPaths);
  if (node.kind === "saga") return sagaElement(node, path, options, taskPaths);
  if (node.kind === "continue-as-new") return { tag: "continue-as-new", props: props({ stateBytes: node.stateBytes || undefined }), children: [] };
  const children = node.children.map((child, i) => nodeElement(child, [...path, i], options, taskPaths));
  if (node.kind === "loop") {
    const { loopId, iteration, maxIterations, onMaxReached, until, done } = node;
    const every = node.continueAsNewEvery;
    return { tag: "loop", props: props({ id: loopId, iteration, maxIterations, onMaxReached, continueAsNewEvery: every, until, done }), children };
  }
  if (node.worktree) {
    const { id, path, branch, baseBranch } = node.worktree;
    return { tag: "worktree", props: props({ id, path, branch, baseBranch }), children };
  }
  return { tag: node.kind, props: props({ id: node.id, label: node.label, maxConcurrency: node.maxConcurrency }), children };
}

/**
 * The plan as a frame rooted at `<workflow name>`, with each task's state as its `state` prop.
 * @example
 * const { root, taskPaths } = planToXml(plan, { tableOf: () => "out", stateOf: (t) => states.get(t.nodeId) });
 * live.apply([{ op: "set", path: taskPaths.get(nodeKey("a", 0))!, name: "state", value: "running" }]);
 */
export function planToXml(plan: Plan, options: PlanXmlOptions): PlanXml {
  const taskPaths = new Map<string, number[]>();
  const children = plan.root.children.map((child, i) => nodeElement(child, [i], options, taskPaths));
  return { root: { tag: "workflow", props: { name: plan.workflowName }, children }, taskPaths };
}
