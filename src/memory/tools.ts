/**
 * `memoryTools`: the `remember` and `recall` tools an agent is given for a task whose memory has
 * `tools: true`. They reach that task's memory through the tool context (its namespaces, tags and
 * run), and every call is journaled in `_smithers_tool_calls` like any `defineTool` tool.
 */
import { z } from "zod";
import { SmithersError } from "../errors/index.ts";
import { defineTool, getToolContext, type ToolMemory } from "../tools/index.ts";

function taskMemory(tool: string): ToolMemory {
  const memory = getToolContext()?.memory;
  if (!memory) {
    throw new SmithersError("MEMORY_NOT_CONFIGURED", `The ${tool} tool runs only in a task whose memory has tools: true (<Memory ... tools>)`, {
      toolName: tool,
    });
  }
  return memory;
}

/** The tools' input schemas, built on first use: zod objects cost every process that imports the package, and most use no memory. */
const inputs: {
  remember?: z.ZodObject<{ content: z.ZodString }>;
  recall?: z.ZodObject<{ query: z.ZodString; k: z.ZodOptional<z.ZodNumber> }>;
} = {};

const remember = defineTool({
  name: "memory.remember",
  description: "Store a durable fact or finding in long-term memory, so later tasks and runs can recall it.",
  get schema() {
    return (inputs.remember ??= z.object({ content: z.string().min(1).describe("The fact to remember, as a self-contained sentence or paragraph") }));
  },
  // Not a side effect for rewinds (the chunk is this database's own row, and memory outlives runs),
  // and idempotent: the chunk's id is the call's key, so a retry that repeats the call replaces it.
  idempotent: true,
  execute: async ({ content }, ctx) => ({ id: await taskMemory("memory.remember").remember(content, ctx.idempotencyKey) }),
});

const recall = defineTool({
  name: "memory.recall",
  description: "Search long-term memory for the facts most similar to a query.",
  get schema() {
    return (inputs.recall ??= z.object({
      query: z.string().min(1).describe("What to look for"),
      k: z.number().int().min(1).max(50).optional().describe("How many facts (default 5)"),
    }));
  },
  execute: async ({ query, k }) => ({ hits: await taskMemory("memory.recall").recall(query, k) }),
});

/**
 * The memory tools, keyed by name, for an agent's `tools` (with `tools: true` on the task's memory).
 * @example
 * const agent = new ToolLoopAgent({ model, tools: { ...memoryTools } });
 * <Memory bank="incidents" recall={false} tools><Task id="investigate" agent={agent} ...>…</Task></Memory>
 */
export const memoryTools = { remember, recall };
