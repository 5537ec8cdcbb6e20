/**
 * The real Gemini CLI (pinned in scripts/agent-clis) through GeminiAgent, in workflows, against
 * the fake Gemini API: inside a network namespace whose only link leads to the fake servers where
 * namespaces can be made (as root), so nothing it sends leaves the machine. It really runs a shell
 * command, its reply is validated by the task's schema, usage and cost are recorded per model with
 * the model that answered (not "auto"), and the provider's failures end the attempt within seconds
 * with their own codes. The cases run concurrently: each has its own fake server and directories.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { z } from "zod";
import { createSmithers, GeminiAgent, type GeminiAgentOptions, runWorkflow, type SmithersEvent } from "../../../src/index.ts";
import { sql, tempDbPath, tempDir } from "../../helpers.ts";
import { type FakeModelServer, type FakeReply, startFakeModelServer } from "../../support/fake-model/core.ts";
import { geminiApi, geminiToolNames } from "../../support/fake-model/gemini.ts";
import { isolation, type Isolation, realCli, attemptRows } from "../../support/real-cli.ts";

const cli = realCli("gemini");
const skip = "skip" in cli ? cli.skip : undefined;
if (skip !== undefined) console.info(`[skipped] the real Gemini CLI tests: ${skip}`);

/**
 * The models Gemini CLI 0.61 uses with API-key auth and no `--model` ("auto"): its router asks the
 * classifier model for a complexity score first (the fake's default answer, a score of 1, routes
 * to flash), then the conversation runs on the routed model.
 */
const CLASSIFIER = "gemini-3.5-flash-lite";
const ROUTED = "gemini-3.8-flash";

const answer = z.object({ files: z.number(), proof: z.string() });

/** Whether a logged request is a turn of the CLI's conversation (it offers the CLI's tools). */
const mainTurn = (r: { body: unknown }) => geminiToolNames(r.body).length > 0;

describe.skipIf(skip !== undefined)("GeminiAgent running the real Gemini CLI", () => {
  let box: Isolation;
  if (skip === undefined) {
    box = isolation("gemini");
    if (!box.isolated) console.info(`[not isolated] the real Gemini CLI runs on this machine's loopback: ${box.reason}`);
  }
  const servers: FakeModelServer[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    box?.remove();
  });

  /** A one-task workflow whose agent is Gemini CLI pointed at a fake server of its own (`rootDir` is where it works). */
  function workflow(
    agentOptions: Partial<GeminiAgentOptions> = {},
    taskOptions: { retries?: number } = {},
    kitOptions: Parameters<typeof createSmithers>[1] = {},
  ) {
    const server = startFakeModelServer([geminiApi], { hostname: box.host });
    servers.push(server);
    const dbPath = tempDbPath();
    const rootDir = tempDir();
    const home = tempDir();
    const { smithers, Workflow, Task, outputs } = createSmithers({ answer }, { dbPath, ...kitOptions });
    const agent = new GeminiAgent({
      binary: box.wrap((cli as { binary: string }).binary),
      apiKey: "gemini-fake-key",
      configDir: home,
      timeoutMs: 30_000,
      ...agentOptions,
      env: { GOOGLE_GEMINI_BASE_URL: `http://${box.host}:${server.port}`, HOME: home, ...agentOptions.env },
    });
    const wf = smithers(() => (
      <Workflow name="gemini">
        <Task id="work" output={outputs.answer} agent={agent} retries={taskOptions.retries ?? 0}>
          Write proof.txt with a shell command, then report.
        </Task>
      </Workflow>
    ));
    const events: SmithersEvent[] = [];
    const run = () => runWorkflow(wf, { runId: "r1", rootDir, onEvent: (e) => events.push(e) });
    return {
      dbPath,
      rootDir,
      run,
      events,
      script: (...replies: FakeReply[]) => server.script(...replies),
      requests: server.requests,
      attempts: () => attemptRows(dbPath),
    };
  }

  test.concurrent("runs a real shell command in the run's directory, stores the schema-checked reply, the tokens of each model priced at its own price, and the model that answered", async () => {
    const pricing = { [CLASSIFIER]: { inputPerMTok: 0.1, outputPerMTok: 0.4 }, [ROUTED]: { inputPerMTok: 0.5, cachedInputPerMTok: 0.05, outputPerMTok: 3 } };
    const { dbPath, rootDir, run, events, script, requests, attempts } = workflow({}, {}, { pricing });
    script(
      {
        toolCalls: [{ name: "run_shell_command", input: { command: "printf made-by-gemini > proof.txt && cat proof.txt", description: "write proof" } }],
        usage: { inputTokens: 1200, outputTokens: 30 },
      },
      { json: { files: 1, proof: "made-by-gemini" }, usage: { inputTokens: 1300, cachedInputTokens: 1000, outputTokens: 25 } },
    );
    const started = Date.now();
    const result = await run();
    console.info(`[gemini] a 2-turn task with one shell command took ${Date.now() - started} ms`);
    expect(result.status).toBe("finished");
    expect(readFileSync(`${rootDir}/proof.txt`, "utf8")).toBe("made-by-gemini");
    expect(sql(dbPath, "SELECT files, proof FROM answer")).toEqual([{ files: 1, proof: "made-by-gemini" }]);
    // The router's call (the fake's default 50 in / 10 out) and two turns on the routed model.
    const cost = (50 * 0.1 + 10 * 0.4 + (2500 - 1000) * 0.5 + 1000 * 0.05 + 55 * 3) / 1e6;
    expect(attempts()).toEqual([
      {
        attempt: 1,
        state: "finished",
        code: null,
        input_tokens: 2550,
        cached_input_tokens: 1000,
        output_tokens: 65,
        cost_usd: expect.closeTo(cost, 12),
        agent_model: ROUTED,
      },
    ]);
    expect(requests.map((r) => [r.path, r.scripted])).toEqual([
      [`/v1beta/models/${CLASSIFIER}:generateContent`, false],
      [`/v1beta/models/${ROUTED}:streamGenerateContent?alt=sse`, true],
      [`/v1beta/models/${ROUTED}:streamGenerateContent?alt=sse`, true],
    ]);
    const turns = requests.filter(mainTurn);
    expect(geminiToolNames(turns[0]!.body)).toContain("run_shell_command");
    expect(JSON.stringify(turns[1]!.body)).toContain("made-by-gemini");
    // API-key auth; usage statistics off, so no installation id rides along.
    expect(turns[0]!.headers).toMatchObject({ "x-goog-api-key": "gemini-fake-key" });
    expect(Object.keys(turns[0]!.headers)).not.toContain("x-gemini-api-privileged-user-id");
    expect(events.some((e) => e.type === "NodeOutput" && e.stream === "tool" && e.text.includes("run_shell_command"))).toBe(true);
  }, 20_000);

  for (const status of [401, 403]) {
    test.concurrent(`an HTTP ${status} ends the attempt at once with AGENT_AUTH_FAILED, not retried`, async () => {
      const { run, script, requests, attempts } = workflow({}, { retries: 3 });
      script({ error: { status, message: status === 401 ? "API key not valid for this project" : "Permission denied on resource project" } });
      const started = Date.now();
      const result = await run();
      expect(result.status).toBe("failed");
      expect(Date.now() - started).toBeLessThan(15_000);
      expect(attempts().map((a) => [a.attempt, a.code])).toEqual([[1, "AGENT_AUTH_FAILED"]]);
      expect(requests.filter(mainTurn)).toHaveLength(1);
    }, 20_000);
  }

  test.concurrent("an HTTP 429 is AGENT_RATE_LIMITED after one request, retried after Google's suggested delay; tokens without a price leave the cost unknown", async () => {
    const { dbPath, run, script, requests, attempts } = workflow({}, { retries: 1 });
    script(
      { error: { status: 429, message: "Resource has been exhausted (e.g. check quota).", headers: { "retry-after": "1" } } },
      { json: { files: 0, proof: "later" } },
    );
    const result = await run();
    expect(result.status).toBe("finished");
    expect(attempts()).toEqual([
      {
        attempt: 1,
        state: "failed",
        code: "AGENT_RATE_LIMITED",
        input_tokens: 50,
        cached_input_tokens: 0,
        output_tokens: 10,
        cost_usd: null,
        agent_model: CLASSIFIER,
      },
      { attempt: 2, state: "finished", code: null, input_tokens: 150, cached_input_tokens: 0, output_tokens: 30, cost_usd: null, agent_model: ROUTED },
    ]);
    const [first, second] = sql<{ error_json: string | null; started_at_ms: number; finished_at_ms: number }>(
      dbPath,
      "SELECT error_json, started_at_ms, finished_at_ms FROM _smithers_attempts ORDER BY attempt",
    );
    expect(JSON.parse(first!.error_json!).cause).toMatchObject({ code: "AGENT_RATE_LIMITED", exitCode: 173, httpStatus: 429, retryAfterMs: 1000 });
    expect(second!.started_at_ms - first!.finished_at_ms).toBeGreaterThanOrEqual(1000);
    // The CLI's own backoff is off: one request per attempt.
    expect(requests.filter(mainTurn)).toHaveLength(2);
  }, 20_000);

  test.concurrent("an unknown model (HTTP 404) is AGENT_MODEL_NOT_FOUND, not retried", async () => {
    const { run, script, requests, attempts } = workflow({ model: "gemini-0-nonexistent" }, { retries: 3 });
    script({ error: { status: 404, message: "models/gemini-0-nonexistent is not found for API version v1beta, or is not supported for generateContent." } });
    const result = await run();
    expect(result.status).toBe("failed");
    expect(attempts().map((a) => [a.attempt, a.code, a.agent_model])).toEqual([[1, "AGENT_MODEL_NOT_FOUND", "gemini-0-nonexistent"]]);
    expect(requests.map((r) => r.model)).toEqual(["gemini-0-nonexistent"]);
  }, 20_000);

  test.concurrent("a CLI killed by a signal mid-task is AGENT_CLI_CRASHED", async () => {
    const { run, script, attempts } = workflow();
    // The shell tool's parent is the CLI itself.
    script({ toolCalls: [{ name: "run_shell_command", input: { command: "kill -9 $PPID", description: "crash the CLI" } }] });
    const result = await run();
    expect(result.status).toBe("failed");
    expect(attempts().map((a) => [a.attempt, a.code])).toEqual([[1, "AGENT_CLI_CRASHED"]]);
  }, 20_000);

  test.concurrent("a binary that is not there is AGENT_CLI_NOT_FOUND, not retried", async () => {
    const { run, attempts } = workflow({ binary: "/nonexistent/gemini" }, { retries: 3 });
    const result = await run();
    expect(result.status).toBe("failed");
    expect(attempts().map((a) => [a.attempt, a.code])).toEqual([[1, "AGENT_CLI_NOT_FOUND"]]);
  });
});
