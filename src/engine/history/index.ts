/**
 * A run's past: the frame chain (what each step rendered), a run as it stood at a frame, the
 * difference between two plans, time travel (fork, rewind) and retention (pruning old runs).
 * Other rooms and src/engine/index.ts enter this room only through this file.
 */
export {
  clearFrameCache,
  DEFAULT_KEYFRAME_POLICY,
  deltaWeight,
  frameCacheStats,
  FrameChain,
  frameHistory,
  FrameRecorder,
  isKeyframe,
  type KeyframePolicy,
  readFrame,
  readFrameXml,
  setFrameCacheLimits,
} from "./frames.ts";
export { type NodeChange, planChanges, type PlanChanges, type FrameNode, frameNodes } from "./plan-diff.ts";
export { type PrunedRun, type PruneOptions, type PruneReport, pruneRuns } from "./retention.ts";
export { downstreamOf, runAtFrame, type RunAtFrame } from "./run-at-frame.ts";
export {
  type CrossedCall,
  type ForkOptions,
  type ForkRef,
  type ForkResult,
  forkRun,
  forksByFrame,
  type RewindOptions,
  type RewindResult,
  rewindRun,
} from "./time-travel.ts";
