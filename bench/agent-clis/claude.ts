/**
 * bench/agent-clis, Claude Code: the wall time of a one-turn workflow task on the real `claude`
 * CLI (scripts/agent-clis), from runWorkflow's start to its end, against the fake Anthropic API
 * answering at once, in a network namespace with no way out. So the figure is Claude Code's own
 * start-up and exit plus Smithers' overhead. Rows: ClaudeCodeAgent as it runs by default
 * (CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1), and for a user who set that variable empty (then
 * Claude Code also warms up its connection and looks up api.anthropic.com for telemetry; measured
 * only inside the namespace, where those fail at once).
 *
 *   bun run bench/agent-clis/claude.ts [runs]      # default 3 per row
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { z } from "zod";
import { ClaudeCodeAgent } from "../../src/agents/index.ts";
import { createSmithers, runWorkflow } from "../../src/index.ts";
import { jsx } from "../../src/jsx/jsx-runtime.ts";
import { anthropicApi, claudeMainTurn } from "../../test/support/fake-model/anthropic.ts";
import { startFakeModelServer } from "../../test/support/fake-model/core.ts";
import { isolation, realCli } from "../../test/support/real-cli.ts";
import { type CliBenchResult, type CliTurnRow, printCliRows } from "./row.ts";

const CLAUDE_PACKAGE = resolve(import.meta.dir, "../../scripts/agent-clis/node_modules/@anthropic-ai/claude-code/package.json");
const answer = z.object({ done: z.boolean() });

/**
 * Runs a one-turn Claude Code task `runs` times per setting and returns the timings, or the
 * reason the real CLI cannot run here.
 */
export async function benchClaudeOneTurn(runs = 3): Promise<CliBenchResult> {
  const cli = realCli("claude");
  if ("skip" in cli) return cli;
  const version = (JSON.parse(readFileSync(CLAUDE_PACKAGE, "utf8")) as { version: string }).version;
  const box = isolation("ccbench");
  const server = startFakeModelServer([anthropicApi], { hostname: box.host });
  const notes: string[] = [];
  const settings: [string, Record<string, string>][] = [["ClaudeCodeAgent defaults (non-essential traffic off)", {}]];
  if (box.isolated)
    settings.push(["non-essential traffic on (a user's empty CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC)", { CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "" }]);
  else notes.push(`not isolated (${box.reason}): the opted-in row, which would reach the internet, is left out`);
  try {
    const rows: CliTurnRow[] = [];
    for (const [setting, extra] of settings) {
      const times: number[] = [];
      // One untimed run first: the first start of the ~400 MB binary reads it from disk.
      for (let i = -1; i < runs; i++) {
        server.script({ match: claudeMainTurn, json: { done: true } });
        const home = mkdtempSync(join(tmpdir(), "smithers-bench-claude-home-"));
        const agent = new ClaudeCodeAgent({
          binary: box.wrap(cli.binary),
          model: "claude-sonnet-4-5",
          apiKey: "sk-ant-bench",
          configDir: join(home, ".claude"),
          env: { ANTHROPIC_BASE_URL: server.url, HOME: home, ...extra },
        });
        const { smithers, Workflow, Task, outputs } = createSmithers(
          { answer },
          { dbPath: join(mkdtempSync(join(tmpdir(), "smithers-bench-claude-")), "bench.db") },
        );
        // jsx() rather than JSX syntax: this file is the .ts the bench index imports.
        const wf = smithers(() =>
          jsx(Workflow, { name: "claude-one-turn", children: jsx(Task, { id: "turn", output: outputs.answer, agent, children: "Say done." }) }),
        );
        const started = performance.now();
        const result = await runWorkflow(wf, { runId: `r${i + 1}`, rootDir: home });
        if (i >= 0) times.push(performance.now() - started);
        if (result.status !== "finished") throw new Error(`claude bench run ended ${result.status}: ${result.error?.message}`);
      }
      times.sort((a, b) => a - b);
      rows.push({ cli: "claude", version, setting, runs, medianMs: times[Math.floor(times.length / 2)]!, minMs: times[0]!, maxMs: times.at(-1)! });
    }
    const unexpected = server.requests.filter((r) => !claudeMainTurn(r)).map((r) => `${r.method} ${r.path}`);
    if (unexpected.length > 0) notes.push(`requests besides model turns (all rows): ${[...new Set(unexpected)].join(", ")}`);
    return { rows, notes };
  } finally {
    await server.stop();
    box.remove();
  }
}

if (import.meta.main) printCliRows([["claude", await benchClaudeOneTurn(Number(process.argv[2] ?? 3))]]);
