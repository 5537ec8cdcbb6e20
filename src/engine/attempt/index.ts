/**
 * One attempt of one task, the actuator: an agent, a compute function, a static value or a child
 * run (through waits/subflow), with what an attempt touches on the way: side effects recorded once,
 * spend against the run's budget, the task cache, a worktree, a bubblewrap sandbox for a compute
 * body (sandbox.ts); and the rows that record its start and its outcome. The run loop
 * (run/) decides when an attempt starts and commits what it returns. Other rooms and
 * src/engine/index.ts enter this room only through this file.
 */
export {
  isPureAttempt,
  performAttempt,
  performPureAttempt,
  recordSettle,
  recordStart,
  type AttemptInput,
  type AttemptResult,
} from "./attempt.ts";
export { settleOutcome, type AttemptOutcome } from "./outcome.ts";
export type { SideEffectCall } from "./side-effect.ts";
export { sampledBindings, scoreRowId, scorerInput, type ScoreJob } from "./pending-scores.ts";
