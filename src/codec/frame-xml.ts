/**
 * The XML form of a rendered plan (a frame's "full" encoding): plain elements with string
 * attributes, built and parsed with fast-xml-parser. Pure; encode(decode(xml)) === xml for
 * every XML this module writes.
 */
import { XMLBuilder, XMLParser } from "fast-xml-parser";
import { SmithersError } from "../errors/index.ts";
import type { Plan, PlanNode, PlanTask } from "../jsx/index.ts";

export type XmlElement = { tag: string; props: Record<string, string>; children: XmlElement[] };

const OPTIONS = {
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: "",
  parseAttributeValue: false,
  parseTagValue: false,
  trimValues: false,
  suppressEmptyNode: true,
  processEntities: true,
} as const;

const ATTRS = ":@";
type Ordered = Record<string, unknown> & { [ATTRS]?: Record<string, string> };

/** Attributes worth showing: defined, and not the default value. */
function attrs(entries: Record<string, string | number | boolean | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(entries)) if (v !== undefined && v !== false) out[k] = String(v);
  return out;
}

function taskElement(task: PlanTask, tableOf: (task: PlanTask) => string): XmlElement {
  return {
    tag: "task",
    props: attrs({
      id: task.nodeId,
      iteration: task.iteration,
      output: tableOf(task),
      mode: task.mode,
      label: task.label,
      retries: task.retries > 0 ? task.retries : undefined,
      timeoutMs: task.timeoutMs,
      skip: task.skip,
      continueOnFail: task.continueOnFail,
      dependsOn: task.dependsOn.length > 0 ? task.dependsOn.join(",") : undefined,
    }),
    children: [],
  };
}

function nodeElement(node: PlanNode, tableOf: (task: PlanTask) => string): XmlElement {
  const children = node.kind === "task" ? [] : node.children.map((c) => nodeElement(c, tableOf));
  switch (node.kind) {
    case "task":
      return taskElement(node, tableOf);
    case "sequence":
      return { tag: "sequence", props: {}, children };
    case "parallel":
      return { tag: "parallel", props: attrs({ maxConcurrency: node.maxConcurrency }), children };
    case "loop":
      return {
        tag: "loop",
        props: attrs({
          id: node.loopId,
          iteration: node.iteration,
          maxIterations: node.maxIterations,
          onMaxReached: node.onMaxReached,
          until: node.until,
          done: node.done,
        }),
        children,
      };
  }
}

/** The plan as an element tree rooted at `<workflow name>`; `tableOf` names each task's output table. */
export function planToXml(plan: Plan, tableOf: (task: PlanTask) => string): XmlElement {
  return { tag: "workflow", props: { name: plan.workflowName }, children: plan.root.children.map((c) => nodeElement(c, tableOf)) };
}

function toOrdered(el: XmlElement): Ordered {
  const node: Ordered = { [el.tag]: el.children.map(toOrdered) };
  if (Object.keys(el.props).length > 0) node[ATTRS] = el.props;
  return node;
}

function fromOrdered(node: Ordered): XmlElement {
  const tag = Object.keys(node).find((k) => k !== ATTRS);
  if (!tag || tag === "#text") throw new SmithersError("INVALID_FRAME", "Frame XML holds text where only elements are allowed");
  const children = (node[tag] as Ordered[]).map(fromOrdered);
  return { tag, props: { ...(node[ATTRS] ?? {}) }, children };
}

export function encodeFrameXml(root: XmlElement): string {
  return new XMLBuilder(OPTIONS).build([toOrdered(root)]) as string;
}

export function decodeFrameXml(xml: string): XmlElement {
  let parsed: Ordered[];
  try {
    parsed = new XMLParser(OPTIONS).parse(xml, true) as Ordered[];
  } catch (cause) {
    throw new SmithersError("INVALID_FRAME", `Frame XML does not parse: ${(cause as Error).message}`, { cause });
  }
  if (parsed.length !== 1) throw new SmithersError("INVALID_FRAME", `Frame XML must have exactly one root element, found ${parsed.length}`);
  return fromOrdered(parsed[0]!);
}
