/**
 * Executing a run: setting it up or resuming it, the run loop (render -> decide -> commit ->
 * act, with attempts performed by attempt/), the event bus, continue-as-new, the code check on
 * resume, and handing a run to the queue (enqueue).
 * Other rooms and src/engine/index.ts enter this room only through this file.
 */
export { queueName } from "../core/index.ts";
export {
  admissionOf,
  checkStartOptions,
  DEFAULT_IDEMPOTENCY_WINDOW_MS,
  idempotencyConflict,
  type QueueStartOptions,
  startedRunStatus,
  startRequestHash,
} from "./start-options.ts";
export { EventBus } from "./event-bus.ts";
export { validateInput } from "./run-setup.ts";
export { type EnqueuedRun, type RunOptions, type RunResult, runWorkflow } from "./run-workflow.ts";
export { asRunError } from "./run.ts";
