/**
 * bench/agent-clis, Gemini CLI: the wall time of a one-turn workflow task on the real `gemini`
 * CLI (scripts/agent-clis), from runWorkflow's start to its end, against the fake Gemini API
 * answering at once, in a network namespace with no way out. So the figure is Gemini CLI's own
 * start-up and exit (and its model router's call) plus Smithers' overhead. Rows: GeminiAgent as
 * it runs by default (the model "auto": a router call, then the turn), with a model named (no
 * router call), and for a user who opted back in to what GeminiAgent turns off (usage statistics,
 * the CLI's relaunch of itself; measured only inside the namespace, where Clearcut's look-ups fail
 * at once).
 *
 *   bun run bench/agent-clis/gemini.ts [runs]      # default 3 per row
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { z } from "zod";
import { GeminiAgent, type GeminiAgentOptions } from "../../src/agents/index.ts";
import { createSmithers, runWorkflow } from "../../src/index.ts";
import { jsx } from "../../src/jsx/jsx-runtime.ts";
import { startFakeModelServer } from "../../test/support/fake-model/core.ts";
import { geminiApi } from "../../test/support/fake-model/gemini.ts";
import { isolation, realCli } from "../../test/support/real-cli.ts";
import { type CliBenchResult, type CliTurnRow, printCliRows } from "./row.ts";

const GEMINI_PACKAGE = resolve(import.meta.dir, "../../scripts/agent-clis/node_modules/@google/gemini-cli/package.json");
const answer = z.object({ done: z.boolean() });

type Setting = { name: string; options: Partial<GeminiAgentOptions>; env: Record<string, string>; settings?: Record<string, unknown> };

/**
 * Runs a one-turn Gemini CLI task `runs` times per setting and returns the timings, or the reason
 * the real CLI cannot run here.
 */
export async function benchGeminiOneTurn(runs = 3): Promise<CliBenchResult> {
  const cli = realCli("gemini");
  if ("skip" in cli) return cli;
  const version = (JSON.parse(readFileSync(GEMINI_PACKAGE, "utf8")) as { version: string }).version;
  const box = isolation("gmbench");
  const server = startFakeModelServer([geminiApi], { hostname: box.host });
  const notes: string[] = [];
  const settings: Setting[] = [
    { name: "GeminiAgent defaults (model auto: a router call, then the turn)", options: {}, env: {} },
    { name: "GeminiAgent defaults, model gemini-2.5-flash (no router call)", options: { model: "gemini-2.5-flash" }, env: {} },
  ];
  if (box.isolated) {
    settings.push({
      name: "usage statistics and the relaunch back on (the user's settings.json and an empty GEMINI_CLI_NO_RELAUNCH)",
      options: {},
      env: { GEMINI_CLI_NO_RELAUNCH: "" },
      settings: { privacy: { usageStatisticsEnabled: true } },
    });
  } else notes.push(`not isolated (${box.reason}): the opted-in row, which would reach the internet, is left out`);
  try {
    const rows: CliTurnRow[] = [];
    for (const setting of settings) {
      const times: number[] = [];
      // One untimed run first: the first start reads the CLI's bundle (about 100 MB) from disk.
      for (let i = -1; i < runs; i++) {
        server.script({ json: { done: true } });
        const home = mkdtempSync(join(tmpdir(), "smithers-bench-gemini-home-"));
        if (setting.settings) {
          mkdirSync(join(home, ".gemini"));
          writeFileSync(join(home, ".gemini", "settings.json"), JSON.stringify(setting.settings));
        }
        const agent = new GeminiAgent({
          binary: box.wrap(cli.binary),
          apiKey: "gemini-bench-key",
          configDir: home,
          ...setting.options,
          env: { GOOGLE_GEMINI_BASE_URL: `http://${box.host}:${server.port}`, HOME: home, ...setting.env },
        });
        const { smithers, Workflow, Task, outputs } = createSmithers(
          { answer },
          { dbPath: join(mkdtempSync(join(tmpdir(), "smithers-bench-gemini-")), "bench.db") },
        );
        // jsx() rather than JSX syntax: this file is the .ts the bench index imports.
        const wf = smithers(() =>
          jsx(Workflow, { name: "gemini-one-turn", children: jsx(Task, { id: "turn", output: outputs.answer, agent, children: "Say done." }) }),
        );
        const started = performance.now();
        const result = await runWorkflow(wf, { runId: `r${i + 1}`, rootDir: home });
        if (i >= 0) times.push(performance.now() - started);
        if (result.status !== "finished") throw new Error(`gemini bench run ended ${result.status}: ${result.error?.message}`);
      }
      times.sort((a, b) => a - b);
      rows.push({
        cli: "gemini",
        version,
        setting: setting.name,
        runs,
        medianMs: times[Math.floor(times.length / 2)]!,
        minMs: times[0]!,
        maxMs: times.at(-1)!,
      });
    }
    const unexpected = server.requests.filter((r) => r.api !== "gemini" || !/:(stream)?[gG]enerateContent/.test(r.path)).map((r) => `${r.method} ${r.path}`);
    if (unexpected.length > 0) notes.push(`requests besides model calls (all rows): ${[...new Set(unexpected)].join(", ")}`);
    return { rows, notes };
  } finally {
    await server.stop();
    box.remove();
  }
}

if (import.meta.main) printCliRows([["gemini", await benchGeminiOneTurn(Number(process.argv[2] ?? 3))]]);
