/**
 * Names the engine and the dashboard (a browser program that bundles no zod) share: plain lists,
 * no imports. The engine's schemas are built from them (events.ts, states.ts).
 */

/** Every event type the engine emits; `_smithers_events.type` holds one of these. */
export const EVENT_TYPES = [
  "RunStarted",
  "RunResumed",
  "RunResumeFailed",
  "RunFinished",
  "RunFailed",
  "RunCancelled",
  "RunContinuedAsNew",
  "NodeStarted",
  "NodeFinished",
  "NodeFailed",
  "NodeRetrying",
  "NodeSkipped",
  "NodeCancelled",
  "NodeAbandoned",
  "LoopAdvanced",
  "LoopFinished",
  "FrameCommitted",
  "ToolCallStarted",
  "ToolCallFinished",
  "RunWaiting",
  "ApprovalRequested",
  "ApprovalDecided",
  "TimerScheduled",
  "TimerFired",
  "SignalWaiting",
  "SignalReceived",
  "SignalRejected",
  "WaitTimedOut",
  "HumanRequested",
  "HumanAnswered",
  "SubflowWaiting",
  "NodeOutput",
  "RunRefused",
  "RunForked",
  "RunRewound",
  "WorkflowCodeChanged",
  "SideEffectBoundaryCrossed",
] as const;

/**
 * The statuses of a run. `continued`: it handed its work to a new run; `paused`: it holds its state
 * at a frame and no process executes it (a fork not started, a rewound run).
 */
export const RUN_STATUSES = [
  "running",
  "finished",
  "continued",
  "failed",
  "cancelled",
  "paused",
  "waiting-approval",
  "waiting-event",
  "waiting-timer",
] as const;

/** Statuses after which a run never runs again (resuming a failed or cancelled one is a new attempt at it). */
export const ENDED_RUN_STATUSES = ["finished", "continued", "failed", "cancelled"] as const;
