/**
 * bench/agent-clis, Codex: the wall time of a one-turn workflow task on the real `codex` CLI
 * (scripts/agent-clis), from runWorkflow's start to its end, against the fake model server
 * answering at once, in a network namespace with no way out. So the figure is Codex's own
 * start-up and exit plus Smithers' overhead. Rows: CodexAgent as it runs by default (analytics
 * and the plugin sync off), and as it runs for a user who turned both on (then Codex waits
 * about 5 s at exit for analytics it cannot send; measured only inside the namespace).
 *
 *   bun run bench/agent-clis/codex.ts [runs]      # default 3 per row
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { z } from "zod";
import { CodexAgent, type CodexConfigValue } from "../../src/agents/index.ts";
import { createSmithers, runWorkflow } from "../../src/index.ts";
import { jsx } from "../../src/jsx/jsx-runtime.ts";
import { startFakeModelServer } from "../../test/support/fake-model/core.ts";
import { openAiResponses } from "../../test/support/fake-model/openai-responses.ts";
import { isolation, realCli } from "../../test/support/real-cli.ts";
import { type CliBenchResult, type CliTurnRow, printCliRows } from "./row.ts";

const CODEX_PACKAGE = resolve(import.meta.dir, "../../scripts/agent-clis/node_modules/@openai/codex/package.json");
const answer = z.object({ done: z.boolean() });

/**
 * Runs a one-turn Codex task `runs` times per setting and returns the timings, or the reason the
 * real CLI cannot run here.
 */
export async function benchCodexOneTurn(runs = 3): Promise<CliBenchResult> {
  const cli = realCli("codex");
  if ("skip" in cli) return cli;
  const version = (JSON.parse(readFileSync(CODEX_PACKAGE, "utf8")) as { version: string }).version;
  const box = isolation("cxbench");
  const server = startFakeModelServer([openAiResponses], { hostname: box.host });
  const notes: string[] = [];
  // Codex's home (its skills, sessions, state) and the run's database: made per run, removed at the end.
  const scratch: string[] = [];
  const tempDir = (prefix: string) => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    scratch.push(dir);
    return dir;
  };
  const settings: [string, Record<string, CodexConfigValue>][] = [["CodexAgent defaults (analytics, plugins off)", {}]];
  if (box.isolated) settings.push(["analytics and plugins on (a user's opt-in)", { "analytics.enabled": true, "features.plugins": true }]);
  else notes.push(`not isolated (${box.reason}): the opted-in row, which would reach the internet, is left out`);
  try {
    const rows: CliTurnRow[] = [];
    for (const [setting, extra] of settings) {
      const times: number[] = [];
      for (let i = 0; i < runs; i++) {
        server.script({ json: { done: true } });
        const agent = new CodexAgent({
          binary: box.wrap(cli.binary),
          model: "bench-model",
          apiKey: "sk-bench",
          configDir: tempDir("smithers-bench-codex-home-"),
          skipGitRepoCheck: true,
          config: {
            "model_providers.fake": { name: "fake", base_url: `http://${box.host}:${server.port}/v1`, wire_api: "responses", env_key: "OPENAI_API_KEY" },
            model_provider: "fake",
            ...extra,
          },
        });
        const { smithers, Workflow, Task, outputs } = createSmithers({ answer }, { dbPath: join(tempDir("smithers-bench-codex-"), "bench.db") });
        // jsx() rather than JSX syntax: this file is the .ts the bench index imports.
        const wf = smithers(() =>
          jsx(Workflow, { name: "codex-one-turn", children: jsx(Task, { id: "turn", output: outputs.answer, agent, children: "Say done." }) }),
        );
        const started = performance.now();
        const result = await runWorkflow(wf, { runId: `r${i}`, rootDir: tmpdir() });
        times.push(performance.now() - started);
        if (result.status !== "finished") throw new Error(`codex bench run ended ${result.status}: ${result.error?.message}`);
      }
      times.sort((a, b) => a - b);
      rows.push({ cli: "codex", version, setting, runs, medianMs: times[Math.floor(times.length / 2)]!, minMs: times[0]!, maxMs: times.at(-1)! });
    }
    return { rows, notes };
  } finally {
    await server.stop();
    box.remove();
    for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) printCliRows([["codex", await benchCodexOneTurn(Number(process.argv[2] ?? 3))]]);
