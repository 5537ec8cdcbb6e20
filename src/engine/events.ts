import { z } from "zod";

/** Every event type the engine emits; `_smithers_events.type` holds one of these. */
export const SmithersEventTypeSchema = z.enum([
  "RunStarted",
  "RunResumed",
  "RunFinished",
  "RunFailed",
  "RunCancelled",
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
]);
export type SmithersEventType = z.infer<typeof SmithersEventTypeSchema>;

export type SmithersEvent = {
  type: SmithersEventType;
  runId: string;
  timestampMs: number;
  nodeId?: string;
  iteration?: number;
  attempt?: number;
  durationMs?: number;
  loopId?: string;
  status?: string;
  error?: Record<string, unknown>;
  frameNo?: number;
  encoding?: string;
  toolName?: string;
  /** NodeAbandoned: `process-died` (found at resume) or `body-unsettled` (ignored a stop past the grace period). */
  reason?: string;
};
