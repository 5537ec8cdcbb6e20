/**
 * A workflow as the user defines it: createSmithers and its components, the ctx a render reads,
 * loading a workflow file, the run's input checked against its schema, and the code pin (the hash of
 * the code a run started with).
 * Other rooms and src/engine/index.ts enter this room only through this file.
 */
export { codeHashOf, definitionSignature } from "./code-pin.ts";
export { ALL_NODES, buildCtx, OutputIndex, type OutputLookup, type SmithersCtx, useCtx } from "./ctx.ts";
export { hashInput, validateInput } from "./input.ts";
export { loadWorkflowFile } from "./workflow-file.ts";
export { createSmithers, type CreateSmithersOptions, isSmithersWorkflow, type SmithersWorkflow } from "./workflow.ts";
export { DEFAULT_DB_PATH } from "../core/index.ts";
