export { createSmithers, isSmithersWorkflow, DEFAULT_DB_PATH, type SmithersWorkflow, type CreateSmithersOptions } from "./workflow.ts";
export { runWorkflow, type RunOptions, type RunResult, type EnqueuedRun } from "./run-workflow.ts";
export { queueName } from "./enqueue.ts";
export {
  Worker,
  runWorker,
  loadWorkflowsDir,
  type RegisteredWorkflow,
  type WorkerOptions,
  type WorkerOutcome,
  DEFAULT_WORKER_CONCURRENCY,
  DEFAULT_POLL_INTERVAL_MS,
  MAX_LOAD_RETURNS,
} from "./worker.ts";
export { decide, type Action, type Failure, type NodeStatus } from "./scheduler.ts";
export { buildCtx, useCtx, type SmithersCtx, type OutputLookup } from "./ctx.ts";
export {
  SERVER_RUN_ID,
  checkNewRunId,
  SmithersEventSchema,
  SmithersEventTypeSchema,
  type EventOf,
  type SmithersEvent,
  type SmithersEventType,
  type ToolCallReport,
} from "./events.ts";
export { isOver, isWaiting } from "./states.ts";
export { NodeStateSchema, AttemptStateSchema, RunStatusSchema, type NodeState, type AttemptState, type RunStatus } from "./states.ts";
export { EventBus } from "./event-bus.ts";
export { RESUME_EVENTS, supervise, superviseForever, type SuperviseOptions, type SuperviseOutcome } from "./supervisor.ts";
export { loadWorkflowFile } from "./workflow-file.ts";
export {
  approve,
  checkChoice,
  deny,
  findPendingApproval,
  pendingApprovals,
  requestOf,
  type DecideOptions,
  type Decision,
  type PendingApproval,
} from "./approvals.ts";
export { sendSignal, type SendSignalOptions, type SentSignal } from "./signals.ts";
export { humanInbox, answerHuman, cancelHuman, humanRequestId, type InboxItem, type AnswerOptions } from "./human.ts";
export { addCron, listCrons, removeCron, parseCron, type AddCronOptions, type CronSchedule } from "./cron.ts";
export { fireDueCrons, cronRunId, type CronFire, type CronOutcome, type FireDueCronsOptions } from "./cron-fire.ts";
export type { SideEffectCall } from "./side-effect.ts";
export {
  readFrame,
  readFrameXml,
  frameHistory,
  clearFrameCache,
  frameCacheStats,
  setFrameCacheLimits,
  FrameChain,
  FrameRecorder,
  isKeyframe,
  DEFAULT_KEYFRAME_POLICY,
  type KeyframePolicy,
} from "./frames.ts";
export { validateInput } from "./run-setup.ts";
export { requestCancel, type CancelOutcome } from "./cancel.ts";
export { pruneRuns, type PruneOptions, type PruneReport, type PrunedRun } from "./retention.ts";
export { planChanges, planNodes, type PlanChanges, type PlanNode, type NodeChange } from "./plan-diff.ts";
export {
  forkRun,
  forksByFrame,
  rewindRun,
  type ForkRef,
  type CrossedCall,
  type ForkOptions,
  type ForkResult,
  type RewindOptions,
  type RewindResult,
} from "./time-travel.ts";
export { runAtFrame, downstreamOf, type RunAtFrame } from "./history.ts";
export { inspectRun, listRunItems, listRunSummaries, pendingApprovalsAcrossRuns, queuedSummary, runHeader } from "./queries/index.ts";
