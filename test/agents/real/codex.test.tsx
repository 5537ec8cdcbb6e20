/**
 * The real Codex CLI (scripts/agent-clis, pinned) through CodexAgent in a workflow, inside a
 * network namespace whose only link leads to the fake model server's OpenAI Responses API. Codex
 * reaches it through a custom `model_providers` entry given as `-c` settings (the agent's `config`),
 * which a user's own config.toml cannot break; HTTPS_PROXY points at the fake server too, so any
 * request Codex makes elsewhere shows up in the request log as a CONNECT.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { type Agent, CodexAgent, type CodexAgentOptions, type ModelPricing } from "../../../src/agents/index.ts";
import { createSmithers, runWorkflow } from "../../../src/index.ts";
import { sql, tempDbPath } from "../../helpers.ts";
import { type FakeModelServer, type FakeReply, type LoggedRequest, startFakeModelServer } from "../../support/fake-model/core.ts";
import { openAiResponses } from "../../support/fake-model/openai-responses.ts";
import { type Isolation, isolation, realCli } from "../../support/real-cli.ts";

const cli = realCli("codex");
const skip = "skip" in cli ? cli.skip : undefined;
if (skip) console.warn(`test/agents/real/codex.test.tsx skipped: ${skip}`);

let box: Isolation;
let server: FakeModelServer;

beforeAll(() => {
  if (skip) return;
  box = isolation("codex");
  server = startFakeModelServer([openAiResponses], { hostname: box.host });
});

afterAll(async () => {
  await server?.stop();
  box?.remove();
});

/**
 * CodexAgent on the real CLI, asking the fake server for `model` (each case its own model, so
 * replies cannot cross); the server is also its HTTPS proxy.
 */
function codex(model: string, options: Partial<CodexAgentOptions> = {}, on: FakeModelServer = server): CodexAgent {
  const { binary } = cli as { binary: string };
  const base = `http://${box.host}:${on.port}`;
  return new CodexAgent({
    binary: box.wrap(binary),
    model,
    apiKey: "sk-fake-codex",
    configDir: mkdtempSync(join(tmpdir(), "smithers-codex-home-")),
    skipGitRepoCheck: true,
    timeoutMs: 15_000,
    env: { HTTPS_PROXY: base, https_proxy: base, NO_PROXY: box.host, no_proxy: box.host },
    config: {
      "model_providers.fake": { name: "fake", base_url: `${base}/v1`, wire_api: "responses", env_key: "OPENAI_API_KEY" },
      model_provider: "fake",
    },
    ...options,
  });
}

const ofModel = (model: string) => (r: LoggedRequest) => r.model === model;
const reply = (model: string, r: Omit<FakeReply, "match">): FakeReply => ({ ...r, match: ofModel(model) });
const requestsFor = (model: string) => server.requests.filter(ofModel(model));
/** Requests that went anywhere but the fake model API (through the proxy: CONNECT host:443). */
const phonedHome = () => server.requests.filter((r) => r.method === "CONNECT").map((r) => r.headers.host);

const result = z.object({ marker: z.string(), lines: z.number() });

async function runTask(agent: Agent, options: { retries?: number; pricing?: ModelPricing } = {}) {
  const dbPath = tempDbPath();
  const rootDir = mkdtempSync(join(tmpdir(), "smithers-codex-root-"));
  const { smithers, Workflow, Task, outputs } = createSmithers({ result }, { dbPath });
  const wf = smithers(() => (
    <Workflow name="codex">
      <Task id="work" output={outputs.result} agent={agent} retries={options.retries ?? 0}>
        Write the marker file and report it.
      </Task>
    </Workflow>
  ));
  const started = performance.now();
  const run = await runWorkflow(wf, { runId: "r1", rootDir, ...(options.pricing ? { pricing: options.pricing } : {}) });
  const ms = performance.now() - started;
  const attempts = sql<{
    state: string;
    error_json: string | null;
    input_tokens: number | null;
    cached_input_tokens: number | null;
    output_tokens: number | null;
    cost_usd: number | null;
    agent_model: string | null;
  }>(dbPath, "SELECT state, error_json, input_tokens, cached_input_tokens, output_tokens, cost_usd, agent_model FROM _smithers_attempts ORDER BY attempt");
  const codes = attempts.map((a) => (a.error_json ? (JSON.parse(a.error_json) as { code?: string }).code : a.state));
  return { run, ms, dbPath, rootDir, attempts, codes };
}

describe.skipIf(skip !== undefined)(`CodexAgent on the real codex CLI${skip ? ` (skipped: ${skip})` : ""}`, () => {
  test.concurrent("one tool turn: Codex runs the shell command the model asks for, sends its output back, and the JSON answer is the task's row, with usage, price and the model that answered", async () => {
    const model = "m-tool";
    server.script(
      reply(model, {
        toolCalls: [{ name: "exec_command", input: { cmd: "printf codex-was-here > marker.txt && echo MARKER-OK" } }],
        usage: { inputTokens: 1000, outputTokens: 20, cachedInputTokens: 200 },
      }),
      reply(model, {
        json: { marker: "codex-was-here", lines: 1 },
        model: "m-tool-2026-11-01",
        usage: { inputTokens: 1100, outputTokens: 30, cachedInputTokens: 900, reasoningTokens: 5 },
      }),
    );
    const pricing = { "m-tool-2026-11-01": { inputPerMTok: 2, cachedInputPerMTok: 0.5, outputPerMTok: 10 } };
    const { run, rootDir, dbPath, attempts } = await runTask(codex(model), { pricing });
    expect(run.status).toBe("finished");
    expect(readFileSync(join(rootDir, "marker.txt"), "utf8")).toBe("codex-was-here");
    expect(sql(dbPath, "SELECT marker, lines FROM result")).toEqual([{ marker: "codex-was-here", lines: 1 }]);

    const [first, second] = requestsFor(model);
    const firstBody = first?.body as { tools: { name?: string }[]; text?: { format?: { type?: string } } };
    expect(firstBody.tools.map((t) => t.name)).toContain("exec_command");
    expect(firstBody.text?.format?.type).toBe("json_schema"); // the task's schema, as --output-schema
    const toolOutput = (second!.body as { input: { type: string; output?: string }[] }).input.find((i) => i.type === "function_call_output");
    expect(toolOutput?.output).toContain("MARKER-OK");

    // Both requests' tokens; priced from `pricing` for the model the server said answered.
    const cost = ((2100 - 1100) * 2 + 1100 * 0.5 + 50 * 10) / 1e6;
    expect(attempts).toEqual([
      {
        state: "finished",
        error_json: null,
        input_tokens: 2100,
        cached_input_tokens: 1100,
        output_tokens: 50,
        cost_usd: expect.closeTo(cost, 12),
        agent_model: "m-tool-2026-11-01",
      },
    ]);
  }, 20_000);

  test.concurrent("offline, Codex contacts nothing but the model API, and a model without a price costs null, not 0", async () => {
    const model = "m-quiet";
    server.script(reply(model, { json: { marker: "quiet", lines: 0 } }));
    const { run, attempts } = await runTask(codex(model));
    expect(run.status).toBe("finished");
    expect(attempts).toMatchObject([{ input_tokens: 50, output_tokens: 10, cost_usd: null, agent_model: model }]);
    expect(requestsFor(model).map((r) => `${r.method} ${r.path}`)).toEqual(["POST /v1/responses"]);
    const sent = (requestsFor(model)[0]!.headers["x-codex-turn-metadata"] ?? "") as string;
    expect(JSON.parse(sent)).toMatchObject({ analytics_enabled: false });
    expect(phonedHome()).toEqual([]);
  }, 20_000);

  test.concurrent("a user who enabled analytics and plugins in config.toml keeps them: Codex then contacts ab.chatgpt.com and GitHub", async () => {
    const model = "m-opted-in";
    const home = mkdtempSync(join(tmpdir(), "smithers-codex-home-"));
    writeFileSync(join(home, "config.toml"), "[analytics]\nenabled = true\n\n[features]\nplugins = true\n");
    // Its own server, so that what it sends elsewhere is not mistaken for the other cases'.
    const own = startFakeModelServer([openAiResponses], { hostname: box.host });
    try {
      own.script({ json: { marker: "opted-in", lines: 0 } });
      const { run } = await runTask(codex(model, { configDir: home }, own));
      expect(run.status).toBe("finished");
      const hosts = own.requests.flatMap((r) => (r.method === "CONNECT" ? [r.headers.host ?? ""] : []));
      // Analytics at exit; the plugin sync at start (git's clone of github.com, then api.github.com, as far as it gets).
      expect(hosts).toContain("ab.chatgpt.com:443");
      expect(hosts.some((host) => /^(api\.)?github\.com:443$/.test(host))).toBe(true);
    } finally {
      await own.stop();
    }
  }, 20_000);

  test.concurrent("401 and 403 end the attempt at Codex's first retry notice with AGENT_AUTH_FAILED, not retried", async () => {
    const cases = [
      { model: "m-401", status: 401, message: "Incorrect API key provided: sk-fake." },
      { model: "m-403", status: 403, message: "Project does not have access to model." },
    ];
    for (const c of cases) server.script(...Array.from({ length: 6 }, () => reply(c.model, { error: { status: c.status, message: c.message } })));
    const runs = await Promise.all(cases.map((c) => runTask(codex(c.model), { retries: 2 })));
    for (const [i, c] of cases.entries()) {
      const { run, codes, ms } = runs[i]!;
      expect(run.status).toBe("failed");
      expect(run.error?.code).toBe("AGENT_AUTH_FAILED");
      expect(codes).toEqual(["AGENT_AUTH_FAILED"]);
      // Codex alone sends it six times over about 7 s.
      expect(requestsFor(c.model).length).toBeLessThanOrEqual(2);
      expect(ms).toBeLessThan(6_000);
    }
  }, 20_000);

  test.concurrent("a 429 Codex gives up on is AGENT_RATE_LIMITED and retried; one with retry-after Codex waits out itself within the attempt", async () => {
    server.script(
      reply("m-429", { error: { status: 429, message: "Rate limit reached for m-429." } }),
      reply("m-429", { json: { marker: "after-429", lines: 0 } }),
      reply("m-429-wait", { error: { status: 429, message: "Rate limit reached.", headers: { "retry-after": "1" } } }),
      reply("m-429-wait", { json: { marker: "waited", lines: 0 } }),
    );
    const [limited, waited] = await Promise.all([runTask(codex("m-429"), { retries: 1 }), runTask(codex("m-429-wait"), { retries: 1 })]);
    expect(limited.run.status).toBe("finished");
    expect(limited.codes).toEqual(["AGENT_RATE_LIMITED", "finished"]);
    // Codex prints no delay for a 429 (it only obeys retry-after): the engine's own backoff applies.
    expect(JSON.parse(limited.attempts[0]!.error_json!)).not.toHaveProperty("retryAfterMs");
    expect(waited.run.status).toBe("finished");
    expect(waited.codes).toEqual(["finished"]);
    expect(requestsFor("m-429-wait")).toHaveLength(2);
  }, 20_000);

  test.concurrent("an unknown model (404) is AGENT_MODEL_NOT_FOUND, not retried", async () => {
    const model = "m-missing";
    server.script(reply(model, { error: { status: 404, message: `The model \`${model}\` does not exist or you do not have access to it.` } }));
    const { run, codes } = await runTask(codex(model), { retries: 2 });
    expect(run.error?.code).toBe("AGENT_MODEL_NOT_FOUND");
    expect(codes).toEqual(["AGENT_MODEL_NOT_FOUND"]);
  }, 20_000);

  test.concurrent("a CLI killed mid-turn by a signal is AGENT_CLI_CRASHED and retried; a missing binary is AGENT_CLI_NOT_FOUND, not retried", async () => {
    const model = "m-crash";
    const agent = codex(model);
    const pids: number[] = [];
    const watched: Agent = {
      generate: (args) =>
        agent.generate({
          ...args,
          onEvent: (e) => {
            if (e.type === "process") pids.push(e.pid);
            args.onEvent?.(e);
          },
        }),
    };
    // When Codex's request arrives, the CLI dies as from a segmentation fault; the answer never comes.
    const crash = (r: LoggedRequest) => {
      if (r.model !== model) return false;
      setTimeout(() => process.kill(pids[0]!, "SIGSEGV"), 50);
      return true;
    };
    server.script(
      {
        match: crash,
        delayMs: 10_000,
        text: "never sent",
      },
      reply(model, { json: { marker: "second try", lines: 0 } }),
    );
    const [crashed, missing] = await Promise.all([
      runTask(watched, { retries: 1 }),
      runTask(codex("m-none", { binary: join(tmpdir(), "no-such-dir", "codex") }), { retries: 2 }),
    ]);
    expect(crashed.codes).toEqual(["AGENT_CLI_CRASHED", "finished"]);
    expect(crashed.run.status).toBe("finished");
    expect(missing.codes).toEqual(["AGENT_CLI_NOT_FOUND"]);
  }, 20_000);
});
