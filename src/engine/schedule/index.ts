/**
 * The pure scheduler: (plan, node states, clock) -> actions, with the composition rules of
 * parallel, sequence, loop, try/catch and saga, the retry policy and how a failure is described.
 * No I/O: nothing here reads a database or a clock of its own.
 * Other rooms and src/engine/index.ts enter this room only through this file.
 */
export { describeFailure, failureError } from "./failure.ts";
export { retryBudget, retryDelay } from "./retry.ts";
export { type Action, type ContinueFrom, decide, DecideMemo, type Failure, failureIn, type NodeError, type NodeStatus, type TrackedNode } from "./scheduler.ts";
