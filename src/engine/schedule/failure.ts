/** What a scheduler Failure is as an error: the run's error, and what a catch function is given. */
import { SmithersError, type SmithersErrorCode } from "../../errors/index.ts";
import type { ScopeFailure } from "../../jsx/index.ts";
import type { Failure, NodeStatus } from "./scheduler.ts";

/** Errors of the nodes that failed, as this process saw them (with details and cause) or as stored. */
export type FailureSources = { lastErrors: ReadonlyMap<string, SmithersError>; states: ReadonlyMap<string, NodeStatus> };

export function failureError(failure: Failure, src: FailureSources): SmithersError {
  switch (failure.kind) {
    case "loop-max":
      return new SmithersError(
        "RALPH_MAX_REACHED",
        `Loop "${failure.loop.loopId}" reached maxIterations (${failure.loop.maxIterations}) without meeting its until condition`,
        // ralphId: the peer's name for the loop's id in these details.
        { loopId: failure.loop.loopId, ralphId: failure.loop.loopId, maxIterations: failure.loop.maxIterations },
      );
    case "stuck":
      return new SmithersError(
        "DEPENDENCY_DEADLOCK",
        "Nothing can run: every remaining task waits on a dependsOn, needs or deps naming a task that is not in the workflow or can never finish",
      );
    case "deps":
      return new SmithersError(
        "DEPENDENCY_DEADLOCK",
        `Task "${failure.task.nodeId}" reads the output of ${failure.missing.map((id) => `"${id}"`).join(", ")} through deps, which ended without one (skipped, or failed under continueOnFail or inside a <TryCatchFinally> or <Saga> that handled it); pass depsOptional to run without it`,
        { nodeId: failure.task.nodeId, missing: [...failure.missing] },
      );
    case "task": {
      const { task } = failure;
      const seen = src.lastErrors.get(task.key);
      if (seen) return seen;
      // After a resume only the stored code and message are known.
      const stored = src.states.get(task.key)?.error;
      const ids = { nodeId: task.nodeId, iteration: task.iteration };
      return stored
        ? new SmithersError(stored.code as SmithersErrorCode, stored.message, ids)
        : new SmithersError("TASK_FAILED", `Task "${task.nodeId}" failed`, ids);
    }
    case "saga":
      return failure.cause
        ? failureError(failure.cause, src)
        : new SmithersError("SAGA_FAILED", `Saga "${failure.saga.id}" was compensated after a failed step; it does not run forward again (start a new run)`, {
            sagaId: failure.saga.id,
          });
    case "compensation": {
      const cause = failureError(failure.cause, src);
      const after = failure.trigger ? ` while undoing the saga after ${failureError(failure.trigger, src).message}` : "";
      return new SmithersError(
        "SAGA_COMPENSATION_FAILED",
        `Saga "${failure.saga.id}": the compensation of step "${failure.stepId}" failed (${cause.code}: ${cause.message})${after}; the compensations of earlier steps did not run`,
        { sagaId: failure.saga.id, stepId: failure.stepId, ...(cause.nodeId === undefined ? {} : { nodeId: cause.nodeId }), cause },
      );
    }
  }
}

/** The failure as a catch function sees it: code, message and the node that failed. */
export function describeFailure(failure: Failure, src: FailureSources): ScopeFailure {
  const error = failureError(failure, src);
  const { nodeId, iteration } = error.details;
  return {
    code: error.code,
    message: error.message,
    ...(nodeId === undefined ? {} : { nodeId }),
    ...(typeof iteration === "number" ? { iteration } : {}),
  };
}
