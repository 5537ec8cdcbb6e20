/**
 * The real OpenCode CLI (scripts/agent-clis, pinned) through OpenCodeAgent in a workflow, inside a
 * network namespace whose only link leads to the fake model server's Chat Completions API. OpenCode
 * reaches it through an `@ai-sdk/openai-compatible` provider given in OPENCODE_CONFIG_CONTENT, and
 * runs with its own throwaway HOME and XDG directories; HTTPS_PROXY points at the fake server too,
 * so a request OpenCode makes elsewhere shows up in the request log as a CONNECT.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { type Agent, type ModelPricing, OpenCodeAgent, type OpenCodeAgentOptions, retryableAgentError } from "../../../src/agents/index.ts";
import { createSmithers, runWorkflow } from "../../../src/index.ts";
import { sql, tempDbPath } from "../../helpers.ts";
import { type FakeModelServer, type FakeReply, type LoggedRequest, startFakeModelServer } from "../../support/fake-model/core.ts";
import { messageText, openaiChat } from "../../support/fake-model/openai-chat.ts";
import { type Isolation, isolation, realCli } from "../../support/real-cli.ts";

const cli = realCli("opencode");
const skip = "skip" in cli ? cli.skip : undefined;
if (skip) console.warn(`test/agents/real/opencode.test.tsx skipped: ${skip}`);

/** The models the fake provider declares: one per case, so that replies cannot cross. */
const MODELS = ["m-tool", "m-401", "m-403", "m-429", "m-404", "m-crash"];

let box: Isolation;
let server: FakeModelServer;

beforeAll(() => {
  if (skip) return;
  box = isolation("opencode");
  server = startFakeModelServer([openaiChat], { hostname: box.host });
});

afterAll(async () => {
  await server?.stop();
  box?.remove();
});

/** The OPENCODE_CONFIG_CONTENT of a user whose provider is the fake server. */
function providerConfig(): string {
  return JSON.stringify({
    provider: {
      fake: {
        npm: "@ai-sdk/openai-compatible",
        name: "Fake",
        options: { baseURL: `http://${box.host}:${server.port}/v1`, apiKey: "sk-fake-opencode" },
        models: Object.fromEntries(MODELS.map((id) => [id, { name: id }])),
      },
    },
  });
}

/** OpenCodeAgent on the real CLI asking for `fake/<model>`, with a home of its own. */
function opencode(model: string, options: Partial<OpenCodeAgentOptions> = {}): OpenCodeAgent {
  const { binary } = cli as { binary: string };
  const home = mkdtempSync(join(tmpdir(), "smithers-opencode-home-"));
  const xdg = Object.fromEntries(["CONFIG", "DATA", "CACHE", "STATE"].map((kind) => [`XDG_${kind}_HOME`, join(home, kind.toLowerCase())]));
  for (const dir of Object.values(xdg)) mkdirSync(dir);
  const proxy = `http://${box.host}:${server.port}`;
  return new OpenCodeAgent({
    binary: box.wrap(binary),
    model: `fake/${model}`,
    timeoutMs: 40_000,
    env: { HOME: home, ...xdg, OPENCODE_CONFIG_CONTENT: providerConfig(), HTTPS_PROXY: proxy, https_proxy: proxy, NO_PROXY: box.host, no_proxy: box.host },
    ...options,
  });
}

const ofModel = (model: string) => (r: LoggedRequest) => r.model === model;
const reply = (model: string, r: Omit<FakeReply, "match">): FakeReply => ({ ...r, match: ofModel(model) });
const requestsFor = (model: string) => server.requests.filter(ofModel(model));
/**
 * Requests that went anywhere but the fake model API (through the proxy: CONNECT host:443), but
 * for OpenCode installing @opencode-ai/plugin into a config directory that lacks it (once per
 * directory: each case here has a new one).
 */
const phonedHome = () => server.requests.filter((r) => r.method === "CONNECT" && r.headers.host !== "registry.npmjs.org:443").map((r) => r.headers.host);

const result = z.object({ marker: z.string(), lines: z.number() });

async function runTask(agent: Agent, options: { retries?: number; pricing?: ModelPricing } = {}) {
  const dbPath = tempDbPath();
  const rootDir = mkdtempSync(join(tmpdir(), "smithers-opencode-root-"));
  const { smithers, Workflow, Task, outputs } = createSmithers({ result }, { dbPath });
  const wf = smithers(() => (
    <Workflow name="opencode">
      <Task id="work" output={outputs.result} agent={agent} retries={options.retries ?? 0}>
        Write the marker file and report it.
      </Task>
    </Workflow>
  ));
  const run = await runWorkflow(wf, { runId: "r1", rootDir, ...(options.pricing ? { pricing: options.pricing } : {}) });
  const attempts = sql<{
    state: string;
    error_json: string | null;
    input_tokens: number | null;
    cached_input_tokens: number | null;
    output_tokens: number | null;
    cost_usd: number | null;
    agent_model: string | null;
  }>(dbPath, "SELECT state, error_json, input_tokens, cached_input_tokens, output_tokens, cost_usd, agent_model FROM _smithers_attempts ORDER BY attempt");
  // The attempt's error (the code and, from generateStructured, retryAfterMs) and the agent's own under `cause`.
  const errors = attempts.map((a) =>
    a.error_json ? (JSON.parse(a.error_json) as { code?: string; retryAfterMs?: number; cause?: Record<string, unknown> }) : undefined,
  );
  const codes = attempts.map((a, i) => errors[i]?.code ?? a.state);
  return { run, dbPath, rootDir, attempts, errors, codes };
}

type ChatMessage = { role: string; content: unknown };
type ChatBody = { messages: ChatMessage[]; tools?: { function?: { name?: string } }[] };

describe.skipIf(skip !== undefined)(`OpenCodeAgent on the real opencode CLI${skip ? ` (skipped: ${skip})` : ""}`, () => {
  test.concurrent("one tool turn: OpenCode runs the shell command the model asks for and sends its output back; the JSON answer is the task's row; all tokens counted, the unpriced model priced from `pricing`; nothing else contacted", async () => {
    const model = "m-tool";
    server.script(
      reply(model, {
        toolCalls: [{ name: "bash", input: { command: "printf opencode-was-here > marker.txt && echo MARKER-OK", description: "Write the marker" } }],
        usage: { inputTokens: 1000, outputTokens: 20, cachedInputTokens: 200 },
      }),
      reply(model, { json: { marker: "opencode-was-here", lines: 1 }, usage: { inputTokens: 1100, outputTokens: 30, cachedInputTokens: 900 } }),
    );
    const pricing = { "fake/m-tool": { inputPerMTok: 2, cachedInputPerMTok: 0.5, outputPerMTok: 10 } };
    const { run, rootDir, dbPath, attempts } = await runTask(opencode(model), { pricing });
    expect(run.status).toBe("finished");
    expect(readFileSync(join(rootDir, "marker.txt"), "utf8")).toBe("opencode-was-here");
    expect(sql(dbPath, "SELECT marker, lines FROM result")).toEqual([{ marker: "opencode-was-here", lines: 1 }]);

    // Two model turns and nothing else: --title spares the title request, whose tokens OpenCode would not report.
    const requests = requestsFor(model);
    expect(requests.map((r) => r.stream)).toEqual([true, true]);
    const [first, second] = requests.map((r) => r.body as ChatBody);
    expect((first!.tools ?? []).map((t) => t.function?.name)).toContain("bash");
    const toolMessage = second!.messages.find((m) => m.role === "tool");
    expect(messageText(toolMessage?.content)).toContain("MARKER-OK");

    // OpenCode reports cost 0 for a model it has no price for: recorded as unknown, then priced from `pricing`.
    const cost = ((2100 - 1100) * 2 + 1100 * 0.5 + 50 * 10) / 1e6;
    expect(attempts).toEqual([
      {
        state: "finished",
        error_json: null,
        input_tokens: 2100,
        cached_input_tokens: 1100,
        output_tokens: 50,
        cost_usd: expect.closeTo(cost, 12),
        agent_model: "fake/m-tool",
      },
    ]);
    // No models.dev fetch (OPENCODE_DISABLE_MODELS_FETCH), no update check, no share.
    expect(phonedHome()).toEqual([]);
  }, 45_000);

  test.concurrent("401 and 403 are AGENT_AUTH_FAILED after one request, the CLI ending within seconds of the refusal, not retried", async () => {
    const cases = [
      { model: "m-401", status: 401, message: "Incorrect API key provided: sk-fake." },
      { model: "m-403", status: 403, message: "Project does not have access to model." },
    ];
    const refusedAt = new Map<string, number>();
    for (const c of cases) {
      const refuse = (r: LoggedRequest) => r.model === c.model && refusedAt.set(c.model, performance.now()) !== undefined;
      server.script(...Array.from({ length: 3 }, () => ({ match: refuse, error: { status: c.status, message: c.message } })));
    }
    const runs = await Promise.all(cases.map(async (c) => ({ ...(await runTask(opencode(c.model), { retries: 2 })), endedAt: performance.now() })));
    for (const [i, c] of cases.entries()) {
      const { run, codes, errors, endedAt } = runs[i]!;
      expect(run.status).toBe("failed");
      expect(codes).toEqual(["AGENT_AUTH_FAILED"]);
      expect(errors[0]?.cause).toMatchObject({ statusCode: c.status });
      expect(requestsFor(c.model)).toHaveLength(1);
      // OpenCode does not retry a 401/403 (its retries are for 429, 5xx and network errors).
      expect(endedAt - refusedAt.get(c.model)!).toBeLessThan(10_000);
    }
  }, 45_000);

  test.concurrent("a 429 is retried by OpenCode itself, 5 times after the provider's retry-after-ms; then AGENT_RATE_LIMITED with that delay for the engine's retry", async () => {
    const model = "m-429";
    const limited = { status: 429, message: "Rate limit reached for m-429.", headers: { "retry-after-ms": "40", "retry-after": "1" } };
    server.script(...Array.from({ length: 6 }, () => reply(model, { error: limited })));
    const { run, codes, errors } = await runTask(opencode(model));
    expect(run.status).toBe("failed");
    expect(codes).toEqual(["AGENT_RATE_LIMITED"]);
    // At the top, where the engine reads the delay of its retry; the agent's own error under `cause`.
    expect(errors[0]).toMatchObject({ retryAfterMs: 40, cause: { statusCode: 429, retryAfterMs: 40 } });
    expect(requestsFor(model)).toHaveLength(6);
  }, 45_000);

  test.concurrent("a model the provider does not know (404) and one OpenCode's config lacks are AGENT_MODEL_NOT_FOUND, not retried", async () => {
    server.script(reply("m-404", { error: { status: 404, message: "The model `m-404` does not exist or you do not have access to it." } }));
    const [gone, undeclared] = await Promise.all([runTask(opencode("m-404"), { retries: 2 }), runTask(opencode("m-undeclared"), { retries: 2 })]);
    expect(gone.codes).toEqual(["AGENT_MODEL_NOT_FOUND"]);
    expect(gone.errors[0]?.cause).toMatchObject({ statusCode: 404 });
    expect(undeclared.codes).toEqual(["AGENT_MODEL_NOT_FOUND"]);
    expect(requestsFor("m-undeclared")).toEqual([]);
  }, 45_000);

  test.concurrent("a CLI killed mid-turn by a signal is AGENT_CLI_CRASHED, which the engine retries; a missing binary is AGENT_CLI_NOT_FOUND, not retried", async () => {
    const model = "m-crash";
    const agent = opencode(model);
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
    // Killed as the OOM killer would, while it waits for the model.
    const killOnRequest = (r: LoggedRequest) => {
      if (r.model !== model) return false;
      setTimeout(() => process.kill(pids[0]!, "SIGKILL"), 50);
      return true;
    };
    server.script({ match: killOnRequest, delayMs: 10_000, text: "never sent" });
    const [crashed, missing] = await Promise.all([
      runTask(watched),
      runTask(opencode("m-none", { binary: join(tmpdir(), "no-such-dir", "opencode") }), { retries: 2 }),
    ]);
    expect(crashed.codes).toEqual(["AGENT_CLI_CRASHED"]);
    expect(crashed.errors[0]?.cause).toMatchObject({ exitCode: null, signal: "SIGKILL" });
    expect(retryableAgentError("AGENT_CLI_CRASHED")).toBe(true);
    expect(missing.codes).toEqual(["AGENT_CLI_NOT_FOUND"]);
  }, 45_000);
});
