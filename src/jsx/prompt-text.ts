/**
 * JSX prompts: `<Task agent={a}><ReviewPrompt files={files} /></Task>` renders the element to
 * the prompt text at render time. Function components are called (with the task's output schema
 * description injected as `schema` at the top, as MDX prompts expect); strings, numbers, arrays
 * and fragments are joined; the lowercase elements Markdown compiles to (p, h1, strong, code,
 * ul, li, a, …) are written back as Markdown. Workflow components inside a prompt are an error.
 */
import { SmithersError } from "../errors/index.ts";
import { Fragment, isElement, type SmithersNode } from "./element.ts";

type Props = Record<string, unknown> & { children?: SmithersNode };

/** Whether a Task's children are a JSX prompt (an element, or an array holding one). */
export function isPromptElement(children: unknown): boolean {
  return isElement(children) || (Array.isArray(children) && children.some(isElement));
}

/** The prompt text of `node`; `inject` props go to the outermost function components (e.g. `schema`). */
export function promptText(node: unknown, nodeId: string, inject: Record<string, unknown> = {}): string {
  return text(node, nodeId, inject, { listDepth: 0, ordered: undefined })
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}

type Block = { listDepth: number; ordered: { n: number } | undefined };

function text(node: unknown, nodeId: string, inject: Record<string, unknown>, block: Block): string {
  if (node === null || node === undefined || typeof node === "boolean") return "";
  if (typeof node === "string") return node;
  if (typeof node === "number" || typeof node === "bigint") return String(node);
  if (Array.isArray(node)) return node.map((child) => text(child, nodeId, inject, block)).join("");
  if (!isElement(node)) {
    throw new SmithersError("INVALID_WORKFLOW", `<Task id="${nodeId}">: a prompt cannot hold ${typeof node === "function" ? "a function" : "an object"}`, {
      nodeId,
    });
  }
  const props = (node.props ?? {}) as Props;
  const inner = (b: Block = block) => text(props.children, nodeId, {}, b);
  if (node.type === Fragment) return text(props.children, nodeId, inject, block);
  if (typeof node.type === "function") return text(node.type({ ...inject, ...props }), nodeId, {}, block);
  if (typeof node.type !== "string") return inner();
  if (node.type.startsWith("smithers:")) {
    throw new SmithersError("INVALID_WORKFLOW", `<Task id="${nodeId}">: workflow components cannot appear inside a prompt`, { nodeId });
  }
  return markdown(node.type, props, inner, block, nodeId);
}

/** An element Markdown compiles to, written back as Markdown; any other lowercase element keeps only its text. */
function markdown(tag: string, props: Props, inner: (b?: Block) => string, block: Block, nodeId: string): string {
  const heading = /^h([1-6])$/.exec(tag);
  if (heading) return `\n\n${"#".repeat(Number(heading[1]))} ${inner().trim()}\n\n`;
  switch (tag) {
    case "p":
      return `\n\n${inner().trim()}\n\n`;
    case "br":
      return "\n";
    case "hr":
      return "\n\n---\n\n";
    case "strong":
    case "b":
      return `**${inner()}**`;
    case "em":
    case "i":
      return `*${inner()}*`;
    case "del":
      return `~~${inner()}~~`;
    case "code":
      return block.listDepth < 0 ? inner() : `\`${inner()}\``;
    case "pre": {
      const language = /language-(\S+)/.exec(String((props.children as { props?: { className?: unknown } } | undefined)?.props?.className ?? ""))?.[1] ?? "";
      return `\n\n\`\`\`${language}\n${inner({ listDepth: -1, ordered: undefined }).replace(/\n$/, "")}\n\`\`\`\n\n`;
    }
    case "blockquote":
      return `\n\n${inner()
        .trim()
        .split("\n")
        .map((line) => `> ${line}`.trimEnd())
        .join("\n")}\n\n`;
    case "a":
      return typeof props.href === "string" ? `[${inner()}](${props.href})` : inner();
    case "ul":
    case "ol": {
      // The line breaks between items (as MDX keeps them) are not content: each item starts its own line.
      const items = ([] as unknown[]).concat(props.children ?? []).filter((c) => !(typeof c === "string" && c.trim() === ""));
      const list = { listDepth: block.listDepth + 1, ordered: tag === "ol" ? { n: 0 } : undefined };
      return `\n${items.map((item) => text(item, nodeId, {}, list)).join("")}\n`;
    }
    case "li": {
      const marker = block.ordered ? `${++block.ordered.n}.` : "-";
      const indent = "  ".repeat(Math.max(0, block.listDepth - 1));
      const body = inner({ listDepth: block.listDepth, ordered: undefined })
        .replace(/\n{2,}/g, "\n")
        .trim();
      return `\n${indent}${marker} ${body}`;
    }
    default:
      return inner();
  }
}
