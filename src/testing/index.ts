/**
 * smithers-workflows/testing: test a workflow from `bun test`. testWorkflow runs it against a
 * throwaway database with a virtual clock the test advances; recordAgent and replayAgent stand
 * in for real agents with recorded replies.
 */
export { testWorkflow, WorkflowTest, type TestClock, type TestRunOptions, type TestWorkflowOptions } from "./test-workflow.ts";
export {
  recordAgent,
  replayAgent,
  type RecordingAgent,
  type ReplayAgent,
  type ReplayOptions,
  type Transcript,
  type TranscriptEntry,
} from "./recorded-agent.ts";
export { scriptedAgent, type ScriptedAgent, type ScriptedReply } from "../agents/index.ts";
