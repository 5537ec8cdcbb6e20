/** @jsxImportSource smithers-workflows */
/**
 * Authoring forms smithers-orchestrator documents (JSX prompts, useCtx hooks, ctx.outputs,
 * ctx.latestArray, onProgress), written here in our own words.
 */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers, Loop, runWorkflow, scriptedAgent, useCtx, type SmithersEvent } from "../../src/index.ts";
import { tempDbPath } from "../helpers.ts";

describe("JSX prompts", () => {
  test("a function component child is rendered to the prompt text, with its props and the output schema's description as schema", async () => {
    const { Workflow, Task, smithers, outputs } = createSmithers({ review: z.object({ approved: z.boolean() }) }, { dbPath: tempDbPath() });
    const agent = scriptedAgent([{ approved: true }]);
    const ReviewPrompt = (props: { files: string[]; schema?: string }) => (
      <>
        {"Review these files: "}
        {props.files.join(", ")}
        {"\n\n"}
        {props.schema}
      </>
    );
    const wf = smithers(() => (
      <Workflow name="jsx-prompt">
        <Task id="review" output={outputs.review} agent={agent}>
          <ReviewPrompt files={["a.ts", "b.ts"]} />
        </Task>
      </Workflow>
    ));
    expect(await runWorkflow(wf, { input: {} })).toMatchObject({ status: "finished", output: { approved: true } });
    const prompt = agent.calls[0]?.prompt ?? "";
    expect(prompt.startsWith("Review these files: a.ts, b.ts\n\n")).toBe(true);
    expect(prompt).toContain('"approved"');
  });

  test("the elements Markdown compiles to (as an .mdx prompt produces) come back as Markdown text", async () => {
    const { Workflow, Task, smithers, outputs } = createSmithers({ plan: z.object({ steps: z.array(z.string()) }) }, { dbPath: tempDbPath() });
    const agent = scriptedAgent([{ steps: ["one"] }]);
    const Prompt = (props: { repo: string }) => (
      <>
        <h2>Plan the work</h2>
        <p>
          Repository: <strong>{props.repo}</strong>, see <a href="https://example.com/guide">the guide</a>.
        </p>
        <ul>
          <li>keep it small</li>
          <li>
            use <code>bun test</code>
          </li>
        </ul>
      </>
    );
    const wf = smithers(() => (
      <Workflow name="md-prompt">
        <Task id="plan" output={outputs.plan} agent={agent}>
          <Prompt repo="acme/app" />
        </Task>
      </Workflow>
    ));
    expect((await runWorkflow(wf, { input: {} })).status).toBe("finished");
    const expected = "## Plan the work\n\nRepository: **acme/app**, see [the guide](https://example.com/guide).\n\n- keep it small\n- use `bun test`";
    expect(agent.calls[0]?.prompt.slice(0, expected.length + 1)).toBe(`${expected}\n`);
  });

  test("a JSX prompt without an agent, or holding a workflow component, fails the render with INVALID_WORKFLOW", async () => {
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath: tempDbPath() });
    const agent = scriptedAgent([{ n: 1 }]);
    const trees = [
      <Task id="t" output={outputs.out}>
        <p>no agent</p>
      </Task>,
      <Task id="t" output={outputs.out} agent={agent}>
        <Task id="inner" output={outputs.out}>
          {{ n: 2 }}
        </Task>
      </Task>,
    ];
    for (const tree of trees) {
      const wf = smithers(() => <Workflow name="bad">{tree}</Workflow>);
      expect((await runWorkflow(wf, { input: {} })).error?.code).toBe("INVALID_WORKFLOW");
    }
    expect(agent.calls).toHaveLength(0);
  });
});

describe("useCtx", () => {
  test("a custom hook reads ctx inside a component the workflow renders", async () => {
    const kit = createSmithers({ review: z.object({ approved: z.boolean() }), ship: z.object({ ok: z.boolean() }) }, { dbPath: tempDbPath() });
    const { Workflow, Task, smithers, outputs } = kit;
    const useApproved = (id: string) => Boolean(kit.useCtx().latest<{ approved: boolean }>(outputs.review, id)?.approved);
    function ShipWhenApproved() {
      return useApproved("review") ? (
        <Task id="ship" output={outputs.ship}>
          {{ ok: true }}
        </Task>
      ) : null;
    }
    const wf = smithers(() => (
      <Workflow name="hooks">
        <Task id="review" output={outputs.review}>
          {{ approved: true }}
        </Task>
        <ShipWhenApproved />
      </Workflow>
    ));
    expect(await runWorkflow(wf, { input: {} })).toMatchObject({ status: "finished", output: { ok: true } });
  });

  test("outside a render it is CONTEXT_OUTSIDE_WORKFLOW", () => {
    expect(() => useCtx()).toThrow(expect.objectContaining({ code: "CONTEXT_OUTSIDE_WORKFLOW" }));
  });
});

describe("ctx.outputs and ctx.latestArray", () => {
  test("ctx.outputs(target) and ctx.outputs.<key> list every row of an output, across nodes and iterations", async () => {
    const { Workflow, Task, smithers, outputs } = createSmithers(
      { draft: z.object({ n: z.number() }), total: z.object({ sum: z.number(), rows: z.number() }) },
      { dbPath: tempDbPath() },
    );
    const wf = smithers((ctx) => (
      <Workflow name="all-rows">
        <Task id="seed" output={outputs.draft}>
          {{ n: 100 }}
        </Task>
        <Loop id="l" until={ctx.iterationCount(outputs.draft, "draft") >= 3} maxIterations={5}>
          <Task id="draft" output={outputs.draft}>
            {{ n: ctx.iteration }}
          </Task>
        </Loop>
        <Task id="total" output={outputs.total}>
          {{ sum: ctx.outputs(outputs.draft).reduce((s, r) => s + Number(r.n), 0), rows: ctx.outputs.draft?.length ?? -1 }}
        </Task>
      </Workflow>
    ));
    expect(await runWorkflow(wf, { input: {} })).toMatchObject({ status: "finished", output: { sum: 103, rows: 4 } });
  });

  test("ctx.latestArray keeps the entries a schema accepts, from an array, a JSON text of one, or a single value", () => {
    const { smithers, Workflow } = createSmithers({});
    let seen: unknown[][] = [];
    const wf = smithers((ctx) => {
      const step = z.object({ id: z.string() });
      seen = [
        ctx.latestArray([{ id: "a" }, { id: 1 }, "x"], step),
        ctx.latestArray('[{"id":"b"},{}]', step),
        ctx.latestArray({ id: "c" }, step),
        ctx.latestArray(undefined, step),
      ];
      return <Workflow name="w" />;
    });
    return runWorkflow(wf, { input: {}, dbPath: ":memory:" }).then(() => {
      expect(seen).toEqual([[{ id: "a" }], [{ id: "b" }], [{ id: "c" }], []]);
    });
  });
});

describe("runWorkflow onProgress", () => {
  test("onProgress (the peer's name for onEvent) hears the run's events", async () => {
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath: tempDbPath() });
    const wf = smithers(() => (
      <Workflow name="progress">
        <Task id="t" output={outputs.out}>
          {{ n: 1 }}
        </Task>
      </Workflow>
    ));
    const events: SmithersEvent[] = [];
    await runWorkflow(wf, { input: {}, onProgress: (e) => events.push(e) });
    expect(events.map((e) => e.type).filter((t) => t !== "FrameCommitted")).toEqual(["RunStarted", "NodeStarted", "NodeFinished", "RunFinished"]);
  });
});

describe("fallbackAgent", () => {
  test("is tried after the agent fails, as the last agent of the list", async () => {
    const { Workflow, Task, smithers, outputs } = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath: tempDbPath() });
    const primary = scriptedAgent([new Error("rate limited")]);
    const fallback = scriptedAgent([{ n: 7 }]);
    const wf = smithers(() => (
      <Workflow name="fallback">
        <Task id="t" output={outputs.out} agent={primary} fallbackAgent={fallback}>
          Give me a number.
        </Task>
      </Workflow>
    ));
    expect(await runWorkflow(wf, { input: {} })).toMatchObject({ status: "finished", output: { n: 7 } });
    expect([primary.calls.length, fallback.calls.length]).toEqual([1, 1]);
  });
});
