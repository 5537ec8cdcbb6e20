/**
 * The real Claude Code CLI (pinned in scripts/agent-clis) through ClaudeCodeAgent, in workflows,
 * against the fake Anthropic Messages API: inside a network namespace whose only link leads to
 * the fake server where namespaces can be made (as root), so nothing it sends leaves the machine.
 * It really runs a shell command, its reply is validated by the task's schema, usage, cost and
 * the answering model are recorded, and the provider's failures end the attempt fast with their
 * own codes.
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { ClaudeCodeAgent, type ClaudeCodeAgentOptions, createSmithers, runWorkflow, type SmithersEvent } from "../../../src/index.ts";
import { sql, tempDbPath, tempDir } from "../../helpers.ts";
import { anthropicApi, claudeMainTurn } from "../../support/fake-model/anthropic.ts";
import { type FakeModelServer, type FakeReply, startFakeModelServer } from "../../support/fake-model/core.ts";
import { isolation, type Isolation, realCli, attemptRows } from "../../support/real-cli.ts";

const cli = realCli("claude");
const mustRun = process.platform === "linux" && process.arch === "x64";
const skip = "skip" in cli ? cli.skip : undefined;
if (skip !== undefined) console.info(`[skipped] the real Claude Code tests: ${skip}`);

const answer = z.object({ files: z.number(), proof: z.string() });

describe.skipIf(skip !== undefined)("ClaudeCodeAgent running the real Claude Code", () => {
  let box: Isolation;
  if (skip === undefined) {
    box = isolation("claude");
    if (!box.isolated) console.info(`[not isolated] the real Claude Code runs on this machine's loopback: ${box.reason}`);
  }
  afterAll(() => box?.remove());
  const servers: FakeModelServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.stop()));
  });

  /**
   * A one-task workflow whose agent is Claude Code pointed at a fake server of its own (`rootDir`
   * is where it works); `main` scripts replies to Claude Code's main conversation (side calls get
   * the server's defaults).
   */
  function workflow(
    agentOptions: Partial<ClaudeCodeAgentOptions> = {},
    taskOptions: { retries?: number } = {},
    kitOptions: Parameters<typeof createSmithers>[1] = {},
  ) {
    const server = startFakeModelServer([anthropicApi], { hostname: box.host });
    servers.push(server);
    const main = (...replies: FakeReply[]) => server.script(...replies.map((reply) => ({ match: claudeMainTurn, ...reply })));
    const dbPath = tempDbPath();
    const rootDir = tempDir();
    const home = tempDir();
    const { smithers, Workflow, Task, outputs } = createSmithers({ answer }, { dbPath, ...kitOptions });
    const agent = new ClaudeCodeAgent({
      binary: box.wrap((cli as { binary: string }).binary),
      model: "claude-sonnet-4-5",
      apiKey: "sk-ant-fake",
      configDir: join(home, ".claude"),
      timeoutMs: 60_000,
      ...agentOptions,
      env: { ANTHROPIC_BASE_URL: server.url, HOME: home, ...agentOptions.env },
    });
    const wf = smithers(() => (
      <Workflow name="claude">
        <Task id="work" output={outputs.answer} agent={agent} retries={taskOptions.retries ?? 0}>
          Write proof.txt with a shell command, then report.
        </Task>
      </Workflow>
    ));
    const events: SmithersEvent[] = [];
    const run = (runId = "r1") => runWorkflow(wf, { runId, rootDir, onEvent: (e) => events.push(e) });
    return { dbPath, rootDir, run, events, main, requests: server.requests, attempts: () => attemptRows(dbPath) };
  }

  test("runs a real shell command in the run's directory, stores the schema-checked reply, the usage, the CLI's cost and the model that answered", async () => {
    const { dbPath, rootDir, run, events, main, requests, attempts } = workflow();
    main(
      { toolCalls: [{ name: "Bash", input: { command: "printf made-by-claude > proof.txt && cat proof.txt", description: "write proof" } }] },
      {
        json: { files: 1, proof: "made-by-claude" },
        model: "claude-sonnet-4-5-20250929",
        usage: { inputTokens: 500, cachedInputTokens: 100, outputTokens: 30 },
        chunkDelayMs: 300,
      },
    );
    const result = await run();
    expect(result.status).toBe("finished");
    expect(readFileSync(join(rootDir, "proof.txt"), "utf8")).toBe("made-by-claude");
    expect(sql(dbPath, "SELECT files, proof FROM answer")).toEqual([{ files: 1, proof: "made-by-claude" }]);
    // Two model turns (the fake's default usage of 100 in / 20 out, then the scripted one); Claude
    // Code prices them from its own list for the model it asked for: (500 * 3 + 100 * 0.3 + 50 * 15) / 1e6.
    expect(attempts()).toEqual([
      {
        attempt: 1,
        state: "finished",
        code: null,
        input_tokens: 600,
        cached_input_tokens: 100,
        output_tokens: 50,
        cost_usd: expect.closeTo(0.00228, 8),
        agent_model: "claude-sonnet-4-5-20250929",
      },
    ]);
    // The tool's output went back to the model; an operator saw the call as it happened.
    const turns = requests.filter(claudeMainTurn);
    expect(turns).toHaveLength(2);
    expect(JSON.stringify(turns[1]!.body)).toContain("made-by-claude");
    expect(events.some((e) => e.type === "NodeOutput" && e.stream === "tool" && e.text.includes("proof.txt"))).toBe(true);
    // The answer was seen as it was written (streamed in pieces 300 ms apart), each piece once.
    const texts = events.flatMap((e) => (e.type === "NodeOutput" && e.stream === "text" ? [e.text] : []));
    expect(texts.length).toBeGreaterThan(1);
    expect(JSON.parse(texts.join(""))).toEqual({ files: 1, proof: "made-by-claude" });
    // Offline settings: nothing but model turns reached the server (no warm-up, no telemetry), all with the key.
    expect(requests.every((r) => r.method === "POST" && r.path.startsWith("/v1/messages") && r.headers["x-api-key"] === "sk-ant-fake")).toBe(true);
  });

  test("a model Claude Code has no price for gets no cost from it (not a false one): null, or the workflow's pricing", async () => {
    const priced = workflow({ model: "claude-fake-1" }, {}, { pricing: { "claude-fake-1": { inputPerMTok: 1, outputPerMTok: 10 } } });
    priced.main({ json: { files: 0, proof: "none" }, usage: { inputTokens: 1000, outputTokens: 100 } });
    expect((await priced.run()).status).toBe("finished");
    expect(priced.attempts()[0]).toMatchObject({ input_tokens: 1000, output_tokens: 100, cost_usd: expect.closeTo(0.002, 8), agent_model: "claude-fake-1" });

    const unpriced = workflow({ model: "claude-fake-1" });
    unpriced.main({ json: { files: 0, proof: "none" } });
    expect((await unpriced.run()).status).toBe("finished");
    expect(unpriced.attempts()[0]).toMatchObject({ input_tokens: 100, output_tokens: 20, cost_usd: null, agent_model: "claude-fake-1" });
  });

  test("a refused key (401, which Claude Code would retry for minutes) ends the attempt within seconds with AGENT_AUTH_FAILED, not retried", async () => {
    const { run, main, requests, attempts } = workflow({}, { retries: 3 });
    for (let i = 0; i < 12; i++) main({ error: { status: 401 } });
    const started = performance.now();
    const result = await run();
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("AGENT_AUTH_FAILED");
    expect(performance.now() - started).toBeLessThan(15_000);
    expect(attempts().map((a) => [a.attempt, a.code])).toEqual([[1, "AGENT_AUTH_FAILED"]]);
    // Stopped at its first retry: at most two requests, the rest of the script left unused.
    expect(requests.filter(claudeMainTurn).length).toBeLessThanOrEqual(2);
  });

  test("a rate limit Claude Code rides out itself costs nothing more; one it gives up on is AGENT_RATE_LIMITED, retried after the delay it names", async () => {
    const riding = workflow();
    riding.main({ error: { status: 429, headers: { "retry-after": "1" } } }, { json: { files: 2, proof: "after the wait" } });
    expect((await riding.run()).status).toBe("finished");
    expect(riding.attempts().map((a) => a.state)).toEqual(["finished"]);

    // With one retry allowed (CLAUDE_CODE_MAX_RETRIES) it gives up after the second 429.
    const giving = workflow({ env: { CLAUDE_CODE_MAX_RETRIES: "1" } }, { retries: 1 });
    giving.main(
      { error: { status: 429, headers: { "retry-after": "1" } } },
      { error: { status: 429, headers: { "retry-after": "1" } } },
      { json: { files: 3, proof: "second attempt" } },
    );
    const result = await giving.run();
    expect(result.status).toBe("finished");
    expect(giving.attempts().map((a) => [a.attempt, a.code])).toEqual([
      [1, "AGENT_RATE_LIMITED"],
      [2, null],
    ]);
    const retrying = giving.events.find((e) => e.type === "NodeRetrying") as { delayMs?: number } | undefined;
    expect(retrying?.delayMs).toBeGreaterThanOrEqual(500);
    expect(retrying?.delayMs).toBeLessThan(5_000);
  }, 40_000);

  test("an unknown model (404) is AGENT_MODEL_NOT_FOUND, not retried", async () => {
    const { run, main, attempts } = workflow({}, { retries: 3 });
    for (let i = 0; i < 3; i++) main({ error: { status: 404, message: "model: claude-sonnet-4-5" } });
    const result = await run();
    expect(result.error?.code).toBe("AGENT_MODEL_NOT_FOUND");
    expect(attempts().map((a) => [a.attempt, a.code])).toEqual([[1, "AGENT_MODEL_NOT_FOUND"]]);
  });

  test("a Claude Code killed mid-task (its own Bash tool sends it SIGKILL) is AGENT_CLI_CRASHED, retried; a missing binary is AGENT_CLI_NOT_FOUND, not retried", async () => {
    const crashing = workflow({}, { retries: 1 });
    crashing.main(
      { toolCalls: [{ name: "Bash", input: { command: "kill -KILL $PPID", description: "crash" } }] },
      { json: { files: 0, proof: "second attempt" } },
    );
    expect((await crashing.run()).status).toBe("finished");
    expect(crashing.attempts().map((a) => [a.attempt, a.code])).toEqual([
      [1, "AGENT_CLI_CRASHED"],
      [2, null],
    ]);

    const missing = workflow({ binary: join(tempDir(), "claude") }, { retries: 3 });
    expect((await missing.run()).error?.code).toBe("AGENT_CLI_NOT_FOUND");
    expect(missing.attempts().map((a) => [a.attempt, a.code])).toEqual([[1, "AGENT_CLI_NOT_FOUND"]]);
    expect(missing.requests).toEqual([]);
  }, 30_000);

  test.skipIf(process.getuid?.() !== 0)(
    "as root, yolo works (IS_SANDBOX=1 is set for it); with IS_SANDBOX=0 from the user the refusal is AGENT_ROOT_REFUSED, not retried",
    async () => {
      const { run, requests, attempts } = workflow({ env: { IS_SANDBOX: "0" } }, { retries: 3 });
      const result = await run();
      expect(result.error?.code).toBe("AGENT_ROOT_REFUSED");
      expect(attempts().map((a) => [a.attempt, a.code])).toEqual([[1, "AGENT_ROOT_REFUSED"]]);
      expect(requests.filter(claudeMainTurn)).toEqual([]);
    },
  );
});

// Elsewhere a skip is fine; on Linux x64 it is a failure.
if (skip !== undefined && mustRun) {
  test("the real Claude Code runs on Linux x64", () => {
    throw new Error(`the real Claude Code must run on Linux x64, but: ${skip}`);
  });
}
