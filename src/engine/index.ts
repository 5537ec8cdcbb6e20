export { createSmithers, isSmithersWorkflow, DEFAULT_DB_PATH, type SmithersWorkflow, type CreateSmithersOptions } from "./workflow/index.ts";
export { runWorkflow, type RunOptions, type RunResult, type EnqueuedRun } from "./run/index.ts";
export {
  admissionOf,
  checkStartOptions,
  DEFAULT_IDEMPOTENCY_WINDOW_MS,
  idempotencyConflict,
  type QueueStartOptions,
  startedRunStatus,
  startRequestHash,
} from "./run/index.ts";
export { queueName } from "./run/index.ts";
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
} from "./daemon/index.ts";
export { decide, type Action, type Failure, type NodeStatus } from "./schedule/index.ts";
export { buildCtx, useCtx, type SmithersCtx, type OutputLookup } from "./workflow/index.ts";
export {
  SERVER_RUN_ID,
  checkNewRunId,
  smithersEventSchema,
  smithersEventTypeSchema,
  type EventOf,
  type SmithersEvent,
  type SmithersEventType,
  type ToolCallReport,
} from "./core/index.ts";
export { isOver, isWaiting } from "./core/index.ts";
export { checkLimits, limitFor, type Limits, type LimitSpec, mergeLimits, parseLimitFlag } from "./core/index.ts";
export { SYSTEM_CLOCK, type Clock, type ClockTimer } from "./core/index.ts";
export { nodeStateSchema, attemptStateSchema, runStatusSchema, type NodeState, type AttemptState, type RunStatus } from "./core/index.ts";
export { EventBus } from "./run/index.ts";
export { RESUME_EVENTS, supervise, superviseForever, type SuperviseOptions, type SuperviseOutcome } from "./daemon/index.ts";
export { loadWorkflowFile } from "./workflow/index.ts";
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
} from "./waits/index.ts";
export { sendSignal, type SendSignalOptions, type SentSignal } from "./waits/index.ts";
export { humanInbox, answerHuman, cancelHuman, humanRequestId, type InboxItem, type AnswerOptions } from "./waits/index.ts";
export { addCron, listCrons, removeCron, parseCron, type AddCronOptions, type CronSchedule } from "./daemon/index.ts";
export { fireDueCrons, cronRunId, type CronFire, type CronOutcome, type FireDueCronsOptions } from "./daemon/index.ts";
export type { SideEffectCall } from "./attempt/index.ts";
export {
  readFrame,
  readFrameXml,
  frameHistory,
  clearFrameCache,
  frameCacheStats,
  setFrameCacheLimits,
  FrameChain,
  FrameRecorder,
  deltaWeight,
  isKeyframe,
  DEFAULT_KEYFRAME_POLICY,
  type KeyframePolicy,
} from "./history/index.ts";
export { validateInput } from "./run/index.ts";
export { requestCancel, type CancelOutcome } from "./waits/index.ts";
export { pruneRuns, type PruneOptions, type PruneReport, type PrunedRun } from "./history/index.ts";
export { planChanges, frameNodes, type PlanChanges, type FrameNode, type NodeChange } from "./history/index.ts";
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
} from "./history/index.ts";
export { runAtFrame, downstreamOf, type RunAtFrame } from "./history/index.ts";
export {
  buildWaterfall,
  bucketRunTimes,
  runActivity,
  inspectRun,
  limitUse,
  runSlots,
  listRunItems,
  listRunSummaries,
  pendingApprovalsAcrossRuns,
  queuedSummary,
  runHeader,
  runWaterfall,
  runScores,
  scorerStats,
  sandboxSessions,
  compareRuns,
  scoreRowsOfRun,
  scorerSummaries,
} from "./queries/index.ts";
export { ownerAlive } from "./core/index.ts";
export { createMetrics, listenMetrics, type SmithersMetrics, type MetricsScrape, type MetricsListener } from "./telemetry/index.ts";
export {
  startTracingFromEnv,
  isTraceparent,
  traceIdOf,
  spanIdsOf,
  tracerRegistered,
  tracingFromEnv,
  OTLP_PROTOCOLS,
  TRACE_SAMPLERS,
  type Tracing,
  type TracingConfig,
  type TracingSetting,
} from "./telemetry/index.ts";
