/** The public API of Smithers: re-exports only. */
export { createSmithers, runWorkflow, isSmithersWorkflow, EventBus, approve, deny, pendingApprovals, useCtx } from "./engine/index.ts";
export { sendSignal, humanInbox, answerHuman, cancelHuman, requestCancel } from "./engine/index.ts";
export type { SendSignalOptions, SentSignal, InboxItem, AnswerOptions } from "./engine/index.ts";
export { addCron, listCrons, removeCron, fireDueCrons, cronRunId } from "./engine/index.ts";
export type { AddCronOptions, CronSchedule, CronFire, FireDueCronsOptions } from "./engine/index.ts";
export { pruneRuns } from "./engine/index.ts";
export type { PruneOptions, PruneReport, PrunedRun } from "./engine/index.ts";
export type {
  SmithersWorkflow,
  CreateSmithersOptions,
  RunOptions,
  RunResult,
  SmithersCtx,
  SmithersEvent,
  SmithersEventType,
  RunStatus,
  NodeState,
  Clock,
  Limits,
  LimitSpec,
} from "./engine/index.ts";
export {
  Workflow,
  Task,
  Sequence,
  Parallel,
  Branch,
  Loop,
  Ralph,
  Approval,
  ApprovalGate,
  EscalationChain,
  approvalDecisionSchema,
  approvalSelectionSchema,
  approvalRankingSchema,
  Subflow,
  Timer,
  WaitForEvent,
  Signal,
  HumanTask,
  TryCatchFinally,
  Saga,
  SagaStep,
  ContinueAsNew,
  continueAsNew,
  Worktree,
  render,
  Fragment,
  createElement,
} from "./jsx/index.ts";
export type {
  ApprovalProps,
  ApprovalOption,
  ApprovalGateProps,
  EscalationChainProps,
  EscalationLevel,
  TaskProps,
  WorkflowProps,
  SequenceProps,
  ParallelProps,
  BranchProps,
  LoopProps,
  SubflowProps,
  WaitForEventProps,
  SignalProps,
  HumanTaskProps,
  TryCatchFinallyProps,
  SagaProps,
  SagaStepProps,
  SagaStepDef,
  CatchableCode,
  ContinueAsNewProps,
  Continuation,
  WorktreeProps,
  TaskRunContext,
  CachePolicy,
  CacheScope,
  CacheKeyContext,
  SmithersNode,
  SmithersElement,
} from "./jsx/index.ts";
export { scriptedAgent, generateStructured, extractJson, describeSchema } from "./agents/index.ts";
export type { Agent, AgentGenerateArgs, AgentReply } from "./agents/index.ts";
export { defineTool, getDefinedToolMetadata, runWithToolContext, getToolContext, tools, read, write, edit, grep, bash } from "./tools/index.ts";
export type { DefineToolOptions, DefinedToolMetadata, ToolCallContext, ToolContext } from "./tools/index.ts";
export { ClaudeCodeAgent, CodexAgent, GeminiAgent, OpenCodeAgent } from "./agents/index.ts";
export type { BaseCliAgentOptions, ClaudeCodeAgentOptions, CodexAgentOptions, GeminiAgentOptions, OpenCodeAgentOptions } from "./agents/index.ts";
export { SmithersError, FatalError, RetryableError, errorToJson, SMITHERS_ERROR_CODES, type SmithersErrorCode } from "./errors/index.ts";
export { SmithersDb, openSmithersDb, ensureSmithersTables, camelToSnake } from "./db/index.ts";
export { Sandbox, Memory } from "./jsx/index.ts";
export type { SandboxProps, SandboxPolicy, MemoryProps, MemoryConfig, MemoryTags } from "./jsx/index.ts";
// Memory: createMemory and its types (`ai` is loaded only when a memory embeds). The store's type is
// `MemoryStore` here: `Memory` is the component, as in smithers-orchestrator.
export {
  createMemory,
  memoryTools,
  type EmbeddingModelLike,
  type ForgetOptions,
  type Memory as MemoryStore,
  type MemoryChunk,
  type MemoryHit,
  type MemoryOptions,
  type MemoryScope,
  type MetadataFilter,
  type RecallOptions,
  type RememberOptions,
  type WorkflowMemoryOptions,
} from "./memory/index.ts";
export { createScorer, latencyScorer, llmJudge, schemaAdherenceScorer } from "./scorers/index.ts";
export type { SamplingConfig, Scorer, ScorerBinding, ScorerInput, ScoreResult, ScorersMap, LlmJudgeConfig } from "./scorers/index.ts";
