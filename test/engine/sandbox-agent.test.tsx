/**
 * Sandboxed agent tasks: the real Claude Code CLI (pinned in scripts/agent-clis) run by
 * ClaudeCodeAgent inside real bubblewrap, against the fake Anthropic API on this machine's
 * loopback. With `network: true` the CLI reaches it; without, it cannot, and the task says why.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { ClaudeCodeAgent, CodexAgent, createSmithers, GeminiAgent, runWorkflow, scriptedAgent, type Agent, type SandboxPolicy } from "../../src/index.ts";
import { query, tempDbPath } from "../helpers.ts";
import { anthropicApi, claudeMainTurn } from "../support/fake-model/anthropic.ts";
import { type FakeModelServer, type FakeReply, startFakeModelServer } from "../support/fake-model/core.ts";
import { geminiApi } from "../support/fake-model/gemini.ts";
import { openAiResponses } from "../support/fake-model/openai-responses.ts";
import { realCli } from "../support/real-cli.ts";

const cli = realCli("claude");
const skip = "skip" in cli ? cli.skip : undefined;
if (skip !== undefined) console.info(`[skipped] the sandboxed Claude Code tests: ${skip}`);

const answer = z.object({ proof: z.string() });
type SandboxRow = { status: string; exit_code: number | null; pid: number | null; root_dir: string | null; config_json: string; error_text: string | null };

const servers: FakeModelServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

/** One agent task `work` with `sandbox={policy}` in a fresh run root; `main` scripts the CLI's model turns. */
function sandboxedRun(policy: true | SandboxPolicy, agentOf?: (serverUrl: string) => Agent) {
  const server = startFakeModelServer([anthropicApi, openAiResponses, geminiApi]);
  servers.push(server);
  const dbPath = tempDbPath();
  const rootDir = mkdtempSync(join(tmpdir(), "sandbox-agent-root-"));
  const { smithers, Workflow, Task, outputs } = createSmithers({ answer }, { dbPath });
  const agent =
    agentOf?.(server.url) ??
    new ClaudeCodeAgent({
      binary: (cli as { binary: string }).binary,
      model: "claude-sonnet-4-5",
      apiKey: "sk-ant-fake",
      timeoutMs: 60_000,
      env: { ANTHROPIC_BASE_URL: server.url, CLAUDE_CODE_MAX_RETRIES: "0" },
    });
  const wf = smithers(() => (
    <Workflow name="sandboxed-agent">
      <Task id="work" output={outputs.answer} agent={agent} sandbox={policy} noRetry>
        Run the shell command, then report.
      </Task>
    </Workflow>
  ));
  const main = (...replies: FakeReply[]) => server.script(...replies.map((reply) => ({ match: claudeMainTurn, ...reply })));
  const rows = () => query<SandboxRow>(dbPath, "SELECT status, exit_code, pid, root_dir, config_json, error_text FROM _smithers_sandboxes");
  return { dbPath, rootDir, server, main, rows, run: () => runWorkflow(wf, { rootDir }) };
}

/** What the CLI sent back to the model as the result of its tool call (the second main turn). */
function toolResultText(server: FakeModelServer): string {
  return JSON.stringify(server.requests.filter(claudeMainTurn)[1]?.body ?? null);
}

describe.skipIf(skip !== undefined)("a sandboxed Claude Code task", () => {
  test("finishes with network: its shell command runs in the fresh work dir and the session row has exit 0", async () => {
    const { rootDir, server, main, rows, run, dbPath } = sandboxedRun({ network: true });
    main(
      { toolCalls: [{ name: "Bash", input: { command: "printf inside > proof.txt && pwd && cat proof.txt", description: "write proof" } }] },
      { json: { proof: "done" } },
    );
    const result = await run();
    expect(result.status).toBe("finished");
    expect(await query(dbPath, "SELECT proof FROM answer")).toEqual([{ proof: "done" }]);
    const [row] = await rows();
    expect([row?.status, row?.exit_code, typeof row?.pid, JSON.parse(row!.config_json)]).toEqual(["finished", 0, "number", { network: true }]);
    // The CLI worked in the session's own directory (removed since), not in the run's root.
    expect(toolResultText(server)).toContain(`${row!.root_dir}/work`);
    expect(toolResultText(server)).toContain("inside");
    expect(existsSync(join(rootDir, "proof.txt"))).toBe(false);
    expect(existsSync(row!.root_dir!)).toBe(false);
  });

  test("cannot write into the run's root: the CLI's write fails read-only and the file is absent", async () => {
    const { rootDir, server, main, run } = sandboxedRun({ network: true });
    const target = join(rootDir, "escape.txt");
    main({ toolCalls: [{ name: "Bash", input: { command: `printf escaped > ${target}`, description: "escape" } }] }, { json: { proof: "tried" } });
    const result = await run();
    expect(result.status).toBe("finished");
    expect(existsSync(target)).toBe(false);
    expect(toolResultText(server)).toContain("Read-only file system");
  });

  test("gets none of the engine's environment: an inherited secret is not set inside, the agent's own key is", async () => {
    process.env.SMITHERS_TEST_SECRET = "host-only-secret";
    try {
      const { server, main, run } = sandboxedRun({ network: true });
      main(
        { toolCalls: [{ name: "Bash", input: { command: 'echo "secret=[$SMITHERS_TEST_SECRET] key=[$ANTHROPIC_API_KEY]"', description: "env" } }] },
        { json: { proof: "env" } },
      );
      expect((await run()).status).toBe("finished");
      expect(toolResultText(server)).toContain("secret=[] key=[sk-ant-fake]");
    } finally {
      delete process.env.SMITHERS_TEST_SECRET;
    }
  });

  test("its commands get the policy's CPU limit: a busy loop the CLI starts is stopped by SIGXCPU", async () => {
    const { server, main, run } = sandboxedRun({ network: true, cpuSeconds: 4 });
    main(
      { toolCalls: [{ name: "Bash", input: { command: "sh -c 'while :; do :; done'; echo loop-status=$?", description: "spin" } }] },
      { json: { proof: "limited" } },
    );
    expect((await run()).status).toBe("finished");
    // 152 = 128 + SIGXCPU (24): the soft limit's signal, which names the cause.
    expect(toolResultText(server)).toContain("loop-status=152");
  }, 60_000); // 4 s of CPU for the loop: longer in wall time on a busy machine

  test("without network cannot reach the model server on loopback: SANDBOX_FAILED saying network: true is needed", async () => {
    const { server, main, rows, run } = sandboxedRun(true);
    main({ json: { proof: "unreachable" } });
    const result = await run();
    expect([result.status, result.error?.code]).toEqual(["failed", "SANDBOX_FAILED"]);
    expect(result.error?.message).toContain("network: true");
    expect(server.requests).toEqual([]);
    const [row] = await rows();
    expect(row?.status).toBe("failed");
    expect(row?.error_text).toContain("SANDBOX_FAILED");
  });
});

const codexCli = realCli("codex");
const codexSkip = "skip" in codexCli ? codexCli.skip : undefined;

describe.skipIf(codexSkip !== undefined)("a sandboxed Codex task", () => {
  test("finishes with network: Codex reads its per-call output schema inside, runs its command in the work dir, exit 0", async () => {
    const codex = (url: string) =>
      new CodexAgent({
        binary: (codexCli as { binary: string }).binary,
        model: "m-sandboxed",
        apiKey: "sk-fake-codex",
        skipGitRepoCheck: true,
        timeoutMs: 30_000,
        // Anything but the model API (update checks, telemetry) goes to the fake server too, never off the machine.
        env: { HTTPS_PROXY: url, https_proxy: url },
        config: { "model_providers.fake": { name: "fake", base_url: `${url}/v1`, wire_api: "responses", env_key: "OPENAI_API_KEY" }, model_provider: "fake" },
      });
    const { server, rows, run } = sandboxedRun({ network: true }, codex);
    const ofModel = (r: { model?: string }) => r.model === "m-sandboxed";
    server.script(
      { match: ofModel, toolCalls: [{ name: "exec_command", input: { cmd: "pwd && printf inside > proof.txt && cat proof.txt" } }] },
      { match: ofModel, json: { proof: "codex" } },
    );
    const result = await run();
    expect(result.status).toBe("finished");
    const [row] = await rows();
    expect([row?.status, row?.exit_code]).toEqual(["finished", 0]);
    const [first, second] = server.requests.filter(ofModel);
    expect((first!.body as { text?: { format?: { type?: string } } }).text?.format?.type).toBe("json_schema");
    const toolOutput = JSON.stringify((second!.body as { input: unknown[] }).input);
    expect(toolOutput).toContain(`${row!.root_dir}/work`);
    expect(toolOutput).toContain("inside");
  });
});

const geminiCli = realCli("gemini");
const geminiSkip = "skip" in geminiCli ? geminiCli.skip : undefined;

describe.skipIf(geminiSkip !== undefined)("a sandboxed Gemini CLI task", () => {
  test("finishes with network: its shell command runs in the work dir, exit 0", async () => {
    const gemini = (url: string) =>
      new GeminiAgent({ binary: (geminiCli as { binary: string }).binary, apiKey: "gemini-fake-key", timeoutMs: 30_000, env: { GOOGLE_GEMINI_BASE_URL: url } });
    const { server, rows, run } = sandboxedRun({ network: true }, gemini);
    server.script(
      { toolCalls: [{ name: "run_shell_command", input: { command: "pwd && printf inside > proof.txt && cat proof.txt", description: "proof" } }] },
      { json: { proof: "gemini" } },
    );
    const result = await run();
    expect(result.status).toBe("finished");
    const [row] = await rows();
    expect([row?.status, row?.exit_code]).toEqual(["finished", 0]);
    const sent = JSON.stringify(server.requests.map((r) => r.body));
    expect(sent).toContain(`${row!.root_dir}/work`);
    expect(sent).toContain("inside");
  }, 60_000); // Gemini CLI starts slowly on a busy machine
});

describe("a sandboxed agent task that cannot be sandboxed", () => {
  test("when bubblewrap is missing, a CLI agent's task fails SANDBOX_UNAVAILABLE with a failed session and the CLI never starts", async () => {
    const saved = process.env.SMITHERS_BWRAP;
    process.env.SMITHERS_BWRAP = "/nonexistent/bwrap";
    try {
      // An executable that would leave a trace if it ran: it never does.
      const trace = join(mkdtempSync(join(tmpdir(), "sandbox-agent-trace-")), "ran");
      const script = join(mkdtempSync(join(tmpdir(), "sandbox-agent-cli-")), "claude");
      writeFileSync(script, `#!/bin/sh\ntouch ${trace}\n`);
      chmodSync(script, 0o755);
      const { server, rows, run } = sandboxedRun({ network: true }, () => new ClaudeCodeAgent({ binary: script, apiKey: "sk-ant-fake" }));
      const result = await run();
      expect([result.status, result.error?.code]).toEqual(["failed", "SANDBOX_UNAVAILABLE"]);
      expect(existsSync(trace)).toBe(false);
      expect(server.requests).toEqual([]);
      const [row] = await rows();
      expect([row?.status, row?.pid]).toEqual(["failed", null]);
      expect(row?.error_text).toContain("SANDBOX_UNAVAILABLE");
    } finally {
      if (saved === undefined) delete process.env.SMITHERS_BWRAP;
      else process.env.SMITHERS_BWRAP = saved;
    }
  });

  test("a CLI agent with its own cwd option fails SANDBOX_POLICY_UNSUPPORTED: the sandbox decides where it works", async () => {
    const { server, run } = sandboxedRun(true, () => new ClaudeCodeAgent({ binary: "claude", cwd: "/", apiKey: "sk-ant-fake" }));
    const result = await run();
    expect([result.status, result.error?.code]).toEqual(["failed", "SANDBOX_POLICY_UNSUPPORTED"]);
    expect(result.error?.message).toContain("cwd");
    expect(server.requests).toEqual([]);
  });

  test("an agent that runs in the engine's process fails SANDBOX_POLICY_UNSUPPORTED before it is called, with no session", async () => {
    const inProcess = scriptedAgent([{ text: '{"proof":"ran"}' }]);
    const { rows, run } = sandboxedRun(true, () => inProcess);
    const result = await run();
    expect([result.status, result.error?.code]).toEqual(["failed", "SANDBOX_POLICY_UNSUPPORTED"]);
    expect(inProcess.calls).toHaveLength(0);
    expect(await rows()).toEqual([]);
  });
});
