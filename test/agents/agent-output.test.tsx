/** What an agent reports while it works becomes NodeOutput events: deltas joined, tool calls in order, all stored. */
import { expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers, runWorkflow, type Agent, type SmithersEvent } from "../../src/index.ts";
import { sql, tempDbPath } from "../helpers.ts";

test("streamed deltas are joined into few events; a tool call splits them; the stored text is the whole text in order", async () => {
  const dbPath = tempDbPath();
  const { smithers, Workflow, Task, outputs } = createSmithers({ out: z.object({ ok: z.boolean() }) }, { dbPath });
  const words = Array.from({ length: 60 }, (_, i) => `w${i} `);
  const agent: Agent = {
    generate: async ({ onEvent }) => {
      for (const w of words.slice(0, 30)) onEvent?.({ type: "text", text: w });
      onEvent?.({ type: "tool-call", toolName: "Read", input: { path: "a.ts" } });
      for (const w of words.slice(30)) onEvent?.({ type: "text", text: w });
      return { text: '{"ok": true}' };
    },
  };
  const wf = smithers(() => (
    <Workflow name="stream">
      <Task id="t" output={outputs.out} agent={agent}>
        Go.
      </Task>
    </Workflow>
  ));
  const heard: SmithersEvent[] = [];
  expect((await runWorkflow(wf, { runId: "s", onEvent: (e) => heard.push(e) })).status).toBe("finished");
  const stored = sql<{ payload_json: string }>(dbPath, "SELECT payload_json FROM _smithers_events WHERE type = 'NodeOutput' ORDER BY seq").map(
    (r) => JSON.parse(r.payload_json) as { stream: string; text: string },
  );
  expect(stored.map((o) => [o.stream, o.text])).toEqual([
    ["text", words.slice(0, 30).join("")],
    ["tool", 'Read {"path":"a.ts"}'],
    ["text", words.slice(30).join("")],
  ]);
  expect(heard.filter((e) => e.type === "NodeOutput")).toHaveLength(3);
  // Before the task's finish, in the journal's order.
  const types = sql<{ type: string }>(dbPath, "SELECT type FROM _smithers_events ORDER BY seq").map((r) => r.type);
  expect(types.lastIndexOf("NodeOutput")).toBeLessThan(types.indexOf("NodeFinished"));
});
