export type { Agent, AgentGenerateArgs, AgentReply, StructuredAttempt } from "./types.ts";
export { describeSchema } from "./describe-schema.ts";
export { extractJson } from "./extract-json.ts";
export { buildPrompt, generateStructured } from "./structured.ts";
export { scriptedAgent } from "./scripted.ts";
export type { AgentEvent, AgentTimeout, AgentUsage } from "./types.ts";
export {
  ClaudeCodeAgent,
  CodexAgent,
  GeminiAgent,
  OpenCodeAgent,
  processStartTime,
  killLeftoverGroup,
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
