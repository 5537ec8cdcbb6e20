export type { Agent, AgentGenerateArgs, AgentReply, StructuredAttempt } from "./types.ts";
export { describeSchema } from "./describe-schema.ts";
export { extractJson } from "./extract-json.ts";
export { buildPrompt, generateStructured } from "./structured.ts";
export { scriptedAgent } from "./scripted.ts";
