export type { Agent, AgentEvent, AgentGenerateArgs, AgentReply, AgentTimeout, AgentUsage, ModelTokens, ProcessSandbox, StructuredAttempt } from "./types.ts";
export { addUsage, checkPricing, normalizeUsage, priceUsage, type ModelPrice, type ModelPricing } from "./usage.ts";
export { describeSchema } from "../schema/index.ts";
export { extractJson } from "./extract-json.ts";
export { buildPrompt, generateStructured, refuseUnsandboxable, type AgentFallback } from "./structured.ts";
export { scriptedAgent, type ScriptedAgent, type ScriptedReply } from "./scripted.ts";
export {
  ClaudeCodeAgent,
  CodexAgent,
  GeminiAgent,
  OpenCodeAgent,
  processStartTime,
  killLeftoverGroup,
  childProcess,
  nodeOs,
  trackGroup,
  untrackGroup,
  retryableAgentError,
  AGENT_NEVER_RETRY_CODES,
} from "./cli/index.ts";
export type {
  BaseCliAgentOptions,
  ClaudeCodeAgentOptions,
  CodexAgentOptions,
  CodexConfigValue,
  GeminiAgentOptions,
  OpenCodeAgentOptions,
} from "./cli/index.ts";
