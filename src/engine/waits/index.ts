/**
 * Everything a node can wait for, one file per kind: timers and their settling (waits.ts),
 * approvals, human requests, signals, child runs (subflow), and cancelling a waiting run. Decisions
 * arriving from outside (approve, answerHuman, sendSignal, requestCancel) live here too.
 * Other rooms and src/engine/index.ts enter this room only through this file.
 */
export {
  approve,
  checkChoice,
  type DecideOptions,
  type Decision,
  deny,
  findPendingApproval,
  type PendingApproval,
  pendingApprovals,
  requestOf,
} from "./approvals.ts";
export { type CancelOutcome, requestCancel } from "./cancel.ts";
export { answerHuman, type AnswerOptions, cancelHuman, humanInbox, humanRequestId, type InboxItem } from "./human.ts";
export { sendSignal, type SendSignalOptions, type SentSignal } from "./signals.ts";
export { runSubflow, type StartChildRun } from "./subflow.ts";
export { type LimitHost, type LimitSettle, LimitWaits } from "./limits.ts";
export { Waits } from "./waits.ts";
