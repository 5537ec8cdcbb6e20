/**
 * bench/agent-clis, OpenCode: the wall time of a one-turn workflow task on the real `opencode` CLI
 * (scripts/agent-clis), from runWorkflow's start to its end, against the fake model server's Chat
 * Completions API answering at once, in a network namespace with no way out. So the figure is
 * OpenCode's own start-up and exit plus Smithers' overhead, with OpenCodeAgent's defaults
 * (OPENCODE_DISABLE_MODELS_FETCH=1, `--title`). OpenCode's home is made by one run before the timed
 * ones (its database, its config directory), as on a machine where OpenCode ran before.
 *
 *   bun run bench/agent-clis/opencode.ts [runs]      # default 3
 */
import { mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { z } from "zod";
import { OpenCodeAgent } from "../../src/agents/index.ts";
import { createSmithers, runWorkflow } from "../../src/index.ts";
import { jsx } from "../../src/jsx/jsx-runtime.ts";
import { startFakeModelServer } from "../../test/support/fake-model/core.ts";
import { openaiChat } from "../../test/support/fake-model/openai-chat.ts";
import { isolation, realCli } from "../../test/support/real-cli.ts";
import { type CliBenchResult, type CliTurnRow, printCliRows } from "./row.ts";

const OPENCODE_PACKAGE = resolve(import.meta.dir, "../../scripts/agent-clis/node_modules/opencode-ai/package.json");
const answer = z.object({ done: z.boolean() });

/** A throwaway HOME with its XDG directories, as the child's environment. */
function homeEnv(): Record<string, string> {
  const home = mkdtempSync(join(tmpdir(), "smithers-bench-opencode-home-"));
  const env: Record<string, string> = { HOME: home };
  for (const kind of ["CONFIG", "DATA", "CACHE", "STATE"]) mkdirSync((env[`XDG_${kind}_HOME`] = join(home, kind.toLowerCase())));
  return env;
}

/**
 * Runs a one-turn OpenCode task `runs` times per setting and returns the timings, or the reason
 * the real CLI cannot run here.
 */
export async function benchOpenCodeOneTurn(runs = 3): Promise<CliBenchResult> {
  const cli = realCli("opencode");
  if ("skip" in cli) return cli;
  const version = (JSON.parse(readFileSync(OPENCODE_PACKAGE, "utf8")) as { version: string }).version;
  const box = isolation("ocbench");
  const server = startFakeModelServer([openaiChat], { hostname: box.host });
  const config = JSON.stringify({
    provider: {
      fake: {
        npm: "@ai-sdk/openai-compatible",
        name: "Fake",
        options: { baseURL: `http://${box.host}:${server.port}/v1`, apiKey: "sk-bench" },
        models: { "bench-model": { name: "bench-model" } },
      },
    },
  });
  const notes: string[] = box.isolated ? [] : [`not isolated (${box.reason}): OpenCode ran on this machine's network`];
  const settings: [string, Record<string, string>][] = [["OpenCodeAgent defaults (models.dev fetch off, --title)", {}]];
  try {
    const rows: CliTurnRow[] = [];
    for (const [setting, extra] of settings) {
      const agent = new OpenCodeAgent({
        binary: box.wrap(cli.binary),
        model: "fake/bench-model",
        env: { ...homeEnv(), OPENCODE_CONFIG_CONTENT: config, ...extra },
      });
      const times: number[] = [];
      for (let i = -1; i < runs; i++) {
        server.script({ json: { done: true } });
        const { smithers, Workflow, Task, outputs } = createSmithers(
          { answer },
          { dbPath: join(mkdtempSync(join(tmpdir(), "smithers-bench-opencode-")), "bench.db") },
        );
        // jsx() rather than JSX syntax: this file is the .ts the bench index imports.
        const wf = smithers(() =>
          jsx(Workflow, { name: "opencode-one-turn", children: jsx(Task, { id: "turn", output: outputs.answer, agent, children: "Say done." }) }),
        );
        const started = performance.now();
        const result = await runWorkflow(wf, { runId: `r${i + 1}`, rootDir: mkdtempSync(join(tmpdir(), "smithers-bench-opencode-root-")) });
        if (result.status !== "finished") throw new Error(`opencode bench run ended ${result.status}: ${result.error?.message}`);
        if (i >= 0) times.push(performance.now() - started);
      }
      times.sort((a, b) => a - b);
      rows.push({ cli: "opencode", version, setting, runs, medianMs: times[Math.floor(times.length / 2)]!, minMs: times[0]!, maxMs: times.at(-1)! });
    }
    return { rows, notes };
  } finally {
    await server.stop();
    box.remove();
  }
}

if (import.meta.main) printCliRows([["opencode", await benchOpenCodeOneTurn(Number(process.argv[2] ?? 3))]]);
