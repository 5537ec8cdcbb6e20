/** The run page in Chromium shows an AI SDK agent's streamed text, tool call and tool result while its task runs. */
import { describe, expect, test } from "bun:test";
import { ToolLoopAgent } from "ai";
import { z } from "zod";
import { createSmithers, defineTool } from "../../src/index.ts";
import { gate, streamingModel } from "../support/streaming-model.ts";
import { chromiumPath, dashboardHarness, TIMEOUT_MS } from "./harness.ts";

const lookup = defineTool({
  name: "lookup",
  description: "Look up a file's owner",
  schema: z.object({ file: z.string() }),
  execute: async () => ({ owner: "ada" }),
});

const answer = gate();
const { model } = streamingModel([
  { pieces: ["Reading ", "the diff.", { tool: "lookup", input: { file: "src/a.ts" } }] },
  { pieces: [answer.wait, '{"approved": true, "notes": "owner ada"}'] },
]);
const { smithers, Workflow, Task, outputs } = createSmithers({ review: z.object({ approved: z.boolean(), notes: z.string() }) });
const live = smithers(() => (
  <Workflow name="dash-live">
    <Task id="review" output={outputs.review} agent={new ToolLoopAgent({ model, tools: { lookup } })}>
      Review the change.
    </Task>
  </Workflow>
));

describe.skipIf(!chromiumPath)("an AI SDK agent on the run page", () => {
  const h = dashboardHarness({ workflows: [{ name: "live", path: import.meta.path, workflow: live }] });

  test(
    "its streamed text, tool call and tool result show in the task's panel while the task runs, then its answer",
    async () => {
      const runId = await h.start("live");
      const page = await h.open(`/runs/${runId}`);
      const review = page.locator('.tree .task[data-task="review"]');
      const log = review.getByRole("log", { name: "Agent output of review" });
      await log.getByText("lookup → {", { exact: false }).waitFor({ timeout: 10_000 });
      // The model is paused before its answer: the task is still running.
      expect(await review.locator(".status").textContent()).toBe("running");
      expect(await log.textContent()).toBe('Reading the diff.\n[tool] lookup {"file":"src/a.ts"}\n\n[tool] lookup → {"owner":"ada"}\n');
      answer.open();
      await page.getByTestId("run-status").getByText("finished").waitFor({ timeout: 10_000 });
      expect(await log.textContent()).toEndWith('\n{"approved": true, "notes": "owner ada"}');
      await page.close();
    },
    TIMEOUT_MS,
  );
});
