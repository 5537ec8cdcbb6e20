/** Tools for agents: `defineTool`, the task-local tool context, and the built-in file and process tools. */
import { edit, read, write } from "./files.ts";
import { bash, grep } from "./shell.ts";

export {
  defineTool,
  getDefinedToolMetadata,
  inputDigest,
  toolRevert,
  type DefineToolOptions,
  type DefinedToolMetadata,
  type ToolCallContext,
  type ToolRevertContext,
} from "./define-tool.ts";
export { runWithToolContext, getToolContext, type ToolContext, type ToolMemory } from "./context.ts";
export { DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TOOL_TIMEOUT_MS } from "./constants.ts";
export { read, write, edit, grep, bash };
export { resolveInRoot } from "./sandbox.ts";
export {
  outcomeUnknown,
  previousCall,
  recordedCall,
  recordedOutcome,
  recordedResult,
  throwIfStopped,
  type CallRecord,
  type CallScope,
} from "./recorded-call.ts";

/**
 * The built-in tools, keyed by name, for an agent's `tools`.
 * @example
 * const agent = new ToolLoopAgent({ model, tools });
 */
export const tools = { read, write, edit, grep, bash };
