import { mkdtempSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ToolLoopAgent, type Tool, type ToolSet } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { openSmithersDb, type SmithersDb } from "../../src/db/index.ts";
import { runWithToolContext, type ToolContext } from "../../src/tools/index.ts";
import { tempDbPath } from "../helpers.ts";

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

/** A model that calls `toolName` with each of `inputs` in its first step, then answers "done". */
export function toolCallingModel(toolName: string, inputs: unknown[]): MockLanguageModelV4 {
  let step = 0;
  return new MockLanguageModelV4({
    doGenerate: async () => {
      step += 1;
      if (step === 1) {
        return {
          content: inputs.map((input, i) => ({ type: "tool-call" as const, toolCallId: `call-${i}`, toolName, input: JSON.stringify(input) })),
          finishReason: { unified: "tool-calls" as const, raw: undefined },
          usage,
          warnings: [],
        };
      }
      return { content: [{ type: "text" as const, text: "done" }], finishReason: { unified: "stop" as const, raw: undefined }, usage, warnings: [] };
    },
  });
}

/** A ToolLoopAgent on a mock model whose first step calls `toolName` with `inputs`. */
export function agentCalling(tools: ToolSet, toolName: string, ...inputs: unknown[]): ToolLoopAgent {
  return new ToolLoopAgent({ model: toolCallingModel(toolName, inputs), tools });
}

/** A fresh temp directory with its symlinks resolved (macOS's /tmp is one). */
export function tempRoot(): string {
  return realpathSync(mkdtempSync(join(tmpdir(), "smithers-tools-")));
}

const opened: SmithersDb[] = [];

/** Closes the databases toolScope opened (call in afterEach). */
export async function closeScopes(): Promise<void> {
  for (const db of opened.splice(0)) await db.close();
}

/** A database and a tool context for run r1, node "fix", iteration 0, rooted in a fresh temp directory. */
export function toolScope(overrides: Partial<ToolContext> = {}): { db: SmithersDb; dbPath: string; ctx: ToolContext } {
  const dbPath = tempDbPath();
  const db = overrides.db ?? openSmithersDb(dbPath);
  opened.push(db);
  return { db, dbPath, ctx: { db, runId: "r1", nodeId: "fix", iteration: 0, attempt: 1, rootDir: tempRoot(), ...overrides } };
}

/** Calls a tool's execute directly, as the AI SDK would. */
export function call(t: Tool, input: unknown): Promise<unknown> {
  return Promise.resolve(t.execute!(input, { toolCallId: "direct", messages: [], context: undefined }));
}

/** Calls a tool directly inside `ctx`. */
export function callIn(ctx: ToolContext, t: Tool, input: unknown): Promise<unknown> {
  return runWithToolContext(ctx, () => call(t, input));
}
