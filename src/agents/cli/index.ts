import { AGENT_NEVER_RETRY_CODES } from "./constants.ts";

export { ClaudeCodeAgent, type ClaudeCodeAgentOptions } from "./claude-code.ts";
export { CodexAgent, type CodexAgentOptions, type CodexConfigValue } from "./codex.ts";
export { GeminiAgent, type GeminiAgentOptions } from "./gemini.ts";
export { OpenCodeAgent, type OpenCodeAgentOptions } from "./opencode.ts";
export type { BaseCliAgentOptions } from "./options.ts";
export {
  processStartTime,
  killLeftoverGroup,
  spawnGroup,
  endGroup,
  processAlive,
  groupMembers,
  childProcess,
  nodeOs,
  trackGroup,
  untrackGroup,
  type GroupChild,
} from "./process-group.ts";
export { AGENT_NEVER_RETRY_CODES, KILL_GRACE_MS } from "./constants.ts";

/**
 * Whether an agent failure with this code may succeed on another attempt: not a missing CLI
 * (AGENT_CLI_NOT_FOUND) nor a refused login (AGENT_AUTH_FAILED), which need a person.
 *
 * @example
 * retryableAgentError("AGENT_TIMEOUT"); // true
 * retryableAgentError("AGENT_AUTH_FAILED"); // false
 */
export function retryableAgentError(code: string): boolean {
  return !(AGENT_NEVER_RETRY_CODES as readonly string[]).includes(code);
}
