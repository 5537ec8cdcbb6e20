/** Loading a workflow from a `.tsx`/`.ts` file whose default export is `smithers(...)`. */
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
    throw new SmithersError("WORKFLOW_LOAD_FAILED", `Could not load ${file}: ${(cause as Error)?.message ?? String(cause)}`, { cause });
  }
  const workflow = mod.default;
  if (!isSmithersWorkflow(workflow)) {
    throw new SmithersError("WORKFLOW_LOAD_FAILED", `${file} must export default smithers((ctx) => <Workflow …>)`);
  }
  return workflow;
}
