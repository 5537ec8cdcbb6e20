/** A client of a run's server-sent events sees an AI SDK agent's text and tool calls while the task still runs. */
import { describe, expect, test } from "bun:test";
import { ToolLoopAgent } from "ai";
import { z } from "zod";
import { createSmithers, defineTool } from "../../src/index.ts";
import { gate, streamingModel } from "../support/streaming-model.ts";
import { post, readSse, serverPerTest, waitForStatus, type SseEvent } from "./helpers.ts";

const startServer = serverPerTest();

const lookup = defineTool({
  name: "lookup",
  description: "Look up a file's owner",
  schema: z.object({ file: z.string() }),
  execute: async () => ({ owner: "ada" }),
});

/** A workflow whose one task streams "Reading the diff.", calls lookup, and waits at `paused` before its answer. */
function liveWorkflow(paused: Promise<void>) {
  const { model } = streamingModel([
    { pieces: ["Reading ", "the diff.", { tool: "lookup", input: { file: "src/a.ts" } }] },
    { pieces: [paused, '{"approved": true, "notes": "owner ada"}'] },
  ]);
  const { smithers, Workflow, Task, outputs } = createSmithers({ review: z.object({ approved: z.boolean(), notes: z.string() }) });
  return smithers(() => (
    <Workflow name="live-sse">
      <Task id="review" output={outputs.review} agent={new ToolLoopAgent({ model, tools: { lookup } })}>
        Review the change.
      </Task>
    </Workflow>
  ));
}

/** The NodeOutput events' node, stream and text, adjacent text joined (pieces may be split across flushes). */
const outputsOf = (events: SseEvent[]) =>
  events
    .filter((e) => e.event === "NodeOutput")
    .map((e) => JSON.parse(e.data) as { nodeId: string; stream: string; text: string })
    .reduce<string[][]>((all, o) => {
      const last = all.at(-1);
      if (o.stream === "text" && last?.[1] === "text" && last[0] === o.nodeId) last[2] += o.text;
      else all.push([o.nodeId, o.stream, o.text]);
      return all;
    }, []);

describe("GET /runs/:id/events with an agent at work", () => {
  test("the agent's text, tool call and tool result arrive while the task runs; its answer and the run's end follow", async () => {
    const answer = gate();
    const { url } = await startServer({ workflows: [{ name: "live", path: import.meta.path, workflow: liveWorkflow(answer.wait) }] });
    expect((await post(`${url}/runs`, { workflow: "live", runId: "sse" })).status).toBe(202);

    const early = await readSse(`${url}/runs/sse/events`, { stop: (events) => outputsOf(events).some(([, , text]) => text?.startsWith("lookup →")) });
    expect(outputsOf(early)).toEqual([
      ["review", "text", "Reading the diff."],
      ["review", "tool", 'lookup {"file":"src/a.ts"}'],
      ["review", "tool", 'lookup → {"owner":"ada"}'],
    ]);
    // Still at work: nothing finished, the run is running.
    expect(early.map((e) => e.event)).not.toContain("NodeFinished");
    expect(((await (await fetch(`${url}/runs/sse`)).json()) as { status: string }).status).toBe("running");

    answer.open();
    const rest = await readSse(`${url}/runs/sse/events`, { headers: { "Last-Event-ID": early.at(-1)!.id } });
    expect(outputsOf(rest)).toEqual([["review", "text", '{"approved": true, "notes": "owner ada"}']]);
    const types = rest.map((e) => e.event);
    expect(types.indexOf("NodeOutput")).toBeLessThan(types.indexOf("NodeFinished"));
    expect(types.at(-1)).toBe("RunFinished");
    expect(await waitForStatus(url, "sse", ["finished"])).toBe("finished");
  });
});
