/**
 * Each coding-agent CLI's text, tool calls and tool results become NodeOutput events as its stream
 * records arrive, not when it exits: a stand-in CLI prints its real stream format up to a tool
 * result, then waits for the test before its answer.
 */
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { z } from "zod";
import { ClaudeCodeAgent, CodexAgent, createSmithers, GeminiAgent, OpenCodeAgent, runWorkflow, type Agent, type SmithersEvent } from "../../src/index.ts";
import { sql, tempDbPath, tempDir } from "../helpers.ts";

const ANSWER = '{"ok": true}';

/** A CLI named `name` that prints `before`, waits until `open()` is called, then prints `after` (and Codex's last-message file). */
function gatedCli(name: string, before: unknown[], after: unknown[]) {
  const dir = tempDir();
  const gateFile = join(dir, "gate-open");
  const script = `#!/usr/bin/env bun
const argv = process.argv.slice(2);
await Bun.stdin.text();
const out = (record) => process.stdout.write(JSON.stringify(record) + "\\n");
for (const record of ${JSON.stringify(before)}) out(record);
while (!(await Bun.file(${JSON.stringify(gateFile)}).exists())) await Bun.sleep(10);
for (const record of ${JSON.stringify(after)}) out(record);
const last = argv.indexOf("--output-last-message");
if (last >= 0) await Bun.write(argv[last + 1], ${JSON.stringify(ANSWER)});
`;
  writeFileSync(join(dir, name), script, { mode: 0o755 });
  return { env: { PATH: `${dir}:${dirname(process.execPath)}:${process.env.PATH ?? ""}` }, open: () => writeFileSync(gateFile, "") };
}

type Case = { name: string; agent: (env: Record<string, string>) => Agent; before: unknown[]; after: unknown[]; shown: string[][] };

const CASES: Case[] = [
  {
    name: "claude",
    // (yolo off: what happens to yolo as root is not this test's subject)
    agent: (env) => new ClaudeCodeAgent({ env, yolo: false }),
    before: [
      { type: "system", subtype: "init", session_id: "s1", model: "claude-sonnet-4-5" },
      {
        type: "assistant",
        message: {
          role: "assistant",
          content: [
            { type: "text", text: "Let me look." },
            { type: "tool_use", id: "toolu_1", name: "Bash", input: { command: "ls" } },
          ],
        },
      },
      { type: "user", message: { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "README.md" }] }] } },
    ],
    after: [
      { type: "assistant", message: { role: "assistant", content: [{ type: "text", text: ANSWER }] } },
      { type: "result", subtype: "success", is_error: false, result: ANSWER, session_id: "s1", usage: { input_tokens: 10, output_tokens: 5 } },
    ],
    shown: [
      ["text", "Let me look."],
      ["tool", 'Bash {"command":"ls"}'],
      ["tool", "Bash → README.md"],
    ],
  },
  {
    name: "codex",
    agent: (env) => new CodexAgent({ env }),
    before: [
      { type: "thread.started", thread_id: "t1" },
      { type: "turn.started" },
      { type: "item.completed", item: { id: "item_0", type: "agent_message", text: "Let me look." } },
      { type: "item.started", item: { id: "item_1", type: "command_execution", command: "ls", aggregated_output: "", exit_code: null, status: "in_progress" } },
      {
        type: "item.completed",
        item: { id: "item_1", type: "command_execution", command: "ls", aggregated_output: "README.md", exit_code: 0, status: "completed" },
      },
    ],
    after: [
      { type: "item.completed", item: { id: "item_2", type: "agent_message", text: ANSWER } },
      { type: "turn.completed", usage: { input_tokens: 10, cached_input_tokens: 0, output_tokens: 5 } },
    ],
    shown: [
      ["text", "Let me look."],
      ["tool", 'command_execution {"command":"ls"}'],
      ["tool", "command_execution → README.md"],
    ],
  },
  {
    name: "gemini",
    agent: (env) => new GeminiAgent({ env }),
    before: [
      { type: "init", session_id: "g1", model: "gemini-2.5-pro" },
      { type: "message", role: "assistant", content: "Let me ", delta: true },
      { type: "message", role: "assistant", content: "look.", delta: true },
      { type: "tool_use", tool_name: "run_shell_command", tool_id: "tool-1", parameters: { command: "ls" } },
      { type: "tool_result", tool_id: "tool-1", status: "success", output: "README.md" },
    ],
    after: [
      { type: "message", role: "assistant", content: ANSWER, delta: true },
      { type: "result", status: "success", stats: { input_tokens: 10, output_tokens: 5, cached: 0 } },
    ],
    shown: [
      ["text", "Let me look."],
      ["tool", 'run_shell_command {"command":"ls"}'],
      ["tool", "run_shell_command → README.md"],
    ],
  },
  {
    name: "opencode",
    agent: (env) => new OpenCodeAgent({ env }),
    before: [
      { type: "step_start", sessionID: "o1", part: { type: "step-start" } },
      { type: "text", sessionID: "o1", part: { type: "text", text: "Let me look." } },
      {
        type: "tool_use",
        sessionID: "o1",
        part: { type: "tool", tool: "bash", callID: "call_1", state: { status: "completed", input: { command: "ls" }, output: "README.md" } },
      },
    ],
    after: [
      { type: "step_finish", sessionID: "o1", part: { type: "step-finish", reason: "tool-calls", tokens: { input: 10, output: 5 } } },
      { type: "step_start", sessionID: "o1", part: { type: "step-start" } },
      { type: "text", sessionID: "o1", part: { type: "text", text: ANSWER } },
      { type: "step_finish", sessionID: "o1", part: { type: "step-finish", reason: "stop", tokens: { input: 10, output: 5 } } },
    ],
    shown: [
      ["text", "Let me look."],
      ["tool", 'bash {"command":"ls"}'],
      ["tool", "bash → README.md"],
    ],
  },
];

describe("a coding-agent CLI's output while it runs", () => {
  test.each(CASES.map((c) => [c.name, c] as const))(
    "%s: text, tool call and tool result are stored while the CLI still runs, its answer after",
    async (_, c) => {
      const cli = gatedCli(c.name, c.before, c.after);
      const dbPath = tempDbPath();
      const { smithers, Workflow, Task, outputs } = createSmithers({ out: z.object({ ok: z.boolean() }) }, { dbPath });
      const wf = smithers(() => (
        <Workflow name={`live-${c.name}`}>
          <Task id="work" output={outputs.out} agent={c.agent(cli.env)}>
            Look around.
          </Task>
        </Workflow>
      ));
      const heard: [string, string][] = [];
      const third = Promise.withResolvers<void>();
      const onEvent = (e: SmithersEvent) => {
        if (e.type !== "NodeOutput") return;
        heard.push([e.stream, e.text]);
        if (heard.length === 3) third.resolve();
      };
      const finished = runWorkflow(wf, { runId: c.name, onEvent });
      await third.promise;
      const stored = () => sql<{ payload_json: string }>(dbPath, "SELECT payload_json FROM _smithers_events WHERE type = 'NodeOutput' ORDER BY seq");
      expect(
        stored()
          .map((r) => JSON.parse(r.payload_json) as { stream: string; text: string })
          .map((o) => [o.stream, o.text]),
      ).toEqual(c.shown);
      expect(sql(dbPath, "SELECT state FROM _smithers_attempts")).toEqual([{ state: "running" }]);

      cli.open();
      expect((await finished).status).toBe("finished");
      expect(sql(dbPath, "SELECT ok FROM out")).toEqual([{ ok: 1 }]);
      expect(heard.at(-1)).toEqual(["text", ANSWER]);
    },
  );
});
