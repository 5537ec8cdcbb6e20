/** Loading a workflow from a `.tsx`/`.ts` file whose default export is `smithers(...)`. */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { SmithersError } from "../../errors/index.ts";
import { registerMdx } from "../../mdx/index.ts";
import { isSmithersWorkflow, type SmithersWorkflow } from "./workflow.ts";

export async function loadWorkflowFile(file: string): Promise<SmithersWorkflow> {
  registerMdx(); // a workflow may import .mdx prompts
  let mod: Record<string, unknown>;
  try {
    // Bun.pathToFileURL, not node:url's: that module costs a few ms of start-up to load.
    mod = await import(Bun.pathToFileURL(resolve(file)).href);
  } catch (cause) {
    if (cause instanceof SmithersError) throw cause;
    const where = loadErrorLocation(cause);
    const message = (cause as Error)?.message ?? String(cause);
    const at = where ? `${where.file}:${where.line}:${where.column}: ` : "";
    const excerpt = where?.lineText ? `\n  ${where.lineText}\n  ${" ".repeat(Math.max(0, where.column - 1))}^` : "";
    throw new SmithersError("WORKFLOW_LOAD_FAILED", `Could not load ${file}: ${at}${message}${excerpt}`, {
      cause,
      ...(where ? { location: { file: where.file, line: where.line, column: where.column } } : {}),
    });
  }
  const workflow = mod.default;
  if (!isSmithersWorkflow(workflow)) {
    throw new SmithersError("WORKFLOW_LOAD_FAILED", `${file} must export default smithers((ctx) => <Workflow …>)`);
  }
  return workflow;
}

/** Where a workflow module failed to load: `file:line:column`, and the line's text for a syntax error. */
export type LoadErrorLocation = { file: string; line: number; column: number; lineText?: string };

/**
 * The place a load failed, from what Bun throws: a syntax error (BuildMessage) carries its
 * position; an unresolved import (ResolveMessage) its importing file, line and column; an error
 * thrown while the module ran, its stack, whose first file frame outside node_modules is the
 * author's line.
 */
export function loadErrorLocation(error: unknown): LoadErrorLocation | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const e = error as {
    position?: { file?: string; line?: number; column?: number; lineText?: string } | null;
    referrer?: string;
    specifier?: string;
    line?: number;
    column?: number;
    stack?: string;
  };
  const p = e.position;
  if (p?.file && typeof p.line === "number" && p.line > 0)
    return { file: p.file, line: p.line, column: p.column ?? 0, ...(p.lineText ? { lineText: p.lineText } : {}) };
  if (typeof e.referrer === "string" && e.referrer !== "") {
    if (typeof e.line === "number" && e.line > 0) return { file: e.referrer, line: e.line, column: e.column ?? 0 };
    // Bun leaves the line at 0 here: the import is found by its specifier in the importing file.
    const found = typeof e.specifier === "string" ? findSpecifier(e.referrer, e.specifier) : undefined;
    if (found) return found;
  }
  for (const frame of (e.stack ?? "").split("\n").slice(1)) {
    const m = /\(?((?:file:\/\/)?\/[^()]*?):(\d+):(\d+)\)?\s*$/.exec(frame);
    const file = m?.[1]?.replace(/^file:\/\//, "");
    if (file && !file.includes("/node_modules/")) return { file, line: Number(m![2]), column: Number(m![3]) };
  }
  return undefined;
}

/** The line and column of `specifier`, quoted, in `file`: where it is imported. */
function findSpecifier(file: string, specifier: string): LoadErrorLocation | undefined {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
  const lines = text.split("\n");
  for (const [i, line] of lines.entries()) {
    const at = Math.max(line.indexOf(`"${specifier}"`), line.indexOf(`'${specifier}'`));
    if (at >= 0) return { file, line: i + 1, column: at + 1, lineText: line };
  }
  return undefined;
}
