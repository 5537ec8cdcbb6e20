export * from "./element.ts";
export * from "./components/index.ts";
export * from "./plan.ts";
export * from "./continue-as-new.ts";
export * from "./worktree.ts";
export { render, DEFAULT_MAX_ITERATIONS } from "./render.ts";
export { TryCatchFinally, Saga, SagaStep } from "./compose.ts";
export type { TryCatchFinallyProps, SagaProps, SagaStepProps, SagaStepDef, CatchableCode } from "./compose.ts";
