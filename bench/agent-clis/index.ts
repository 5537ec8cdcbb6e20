/**
 * bench/agent-clis: the wall time of a one-turn workflow task on each real agent CLI
 * (scripts/agent-clis), against the fake model server in a network namespace: the CLI's own
 * start-up and exit plus Smithers' overhead, with the settings that keep it from phoning home.
 *
 *   bun run bench agent-clis [runs]      # default 3 per row
 */
import { benchClaudeOneTurn } from "./claude.ts";
import { benchCodexOneTurn } from "./codex.ts";
import { benchGeminiOneTurn } from "./gemini.ts";
import { benchOpenCodeOneTurn } from "./opencode.ts";
import { type CliBenchResult, printCliRows } from "./row.ts";

export async function runAgentClisBench(args: string[] = []): Promise<void> {
  const runs = Number(args[0] ?? 3);
  const results: Array<[string, CliBenchResult]> = [];
  // One after another: each CLI's start-up is what is measured, not the machine's contention.
  results.push(["claude", await benchClaudeOneTurn(runs)]);
  results.push(["codex", await benchCodexOneTurn(runs)]);
  results.push(["gemini", await benchGeminiOneTurn(runs)]);
  results.push(["opencode", await benchOpenCodeOneTurn(runs)]);
  printCliRows(results);
}

if (import.meta.main) await runAgentClisBench(process.argv.slice(2));
