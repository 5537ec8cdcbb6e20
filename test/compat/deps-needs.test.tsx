/** @jsxImportSource smithers-workflows */
/**
 * `deps`, `needs` and `depsOptional` as smithers-orchestrator's <Task> documentation describes
 * them (its "Dependencies: dependsOn, needs, deps" section), written here in our own words.
 */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers, Loop, Parallel, runWorkflow, scriptedAgent } from "../../src/index.ts";
import { sql, tempDbPath } from "../helpers.ts";

const schemas = {
  analysis: z.object({ summary: z.string(), issues: z.array(z.string()) }),
  review: z.object({ verdict: z.string() }),
  count: z.object({ issues: z.number() }),
};

describe("deps", () => {
  test("an agent task's prompt is built from the upstream row its deps key names (the key is the upstream task id)", async () => {
    const { Workflow, Task, smithers, outputs } = createSmithers(schemas, { dbPath: tempDbPath() });
    const reviewer = scriptedAgent([{ verdict: "ship" }]);
    const wf = smithers(() => (
      <Workflow name="review">
        <Task id="analyze" output={outputs.analysis}>
          {{ summary: "two null checks missing", issues: ["a", "b"] }}
        </Task>
        <Task id="review" output={outputs.review} agent={reviewer} deps={{ analyze: outputs.analysis }}>
          {(deps) => `Review: ${deps.analyze.summary}`}
        </Task>
      </Workflow>
    ));
    expect(await runWorkflow(wf, { input: {} })).toMatchObject({ status: "finished", output: { verdict: "ship" } });
    expect(reviewer.calls).toHaveLength(1);
    expect(reviewer.calls[0]?.prompt.startsWith("Review: two null checks missing")).toBe(true);
  });

  test("a task with deps waits for them even when it comes first in a Parallel", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers(schemas, { dbPath });
    const order: string[] = [];
    const wf = smithers(() => (
      <Workflow name="order">
        <Parallel>
          <Task id="count" output={outputs.count} deps={{ analyze: outputs.analysis }}>
            {async (deps) => {
              order.push("count");
              return { issues: deps.analyze.issues.length };
            }}
          </Task>
          <Task id="analyze" output={outputs.analysis}>
            {async () => {
              await Bun.sleep(20);
              order.push("analyze");
              return { summary: "s", issues: ["x", "y", "z"] };
            }}
          </Task>
        </Parallel>
      </Workflow>
    ));
    expect((await runWorkflow(wf, { input: {} })).status).toBe("finished");
    expect(order).toEqual(["analyze", "count"]);
    expect(sql(dbPath, "SELECT issues FROM count")).toEqual([{ issues: 3 }]);
  });

  test("a plain (not async) deps callback returning an object writes that row", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers(schemas, { dbPath });
    const wf = smithers(() => (
      <Workflow name="static-from-deps">
        <Task id="analyze" output={outputs.analysis}>
          {{ summary: "s", issues: ["only"] }}
        </Task>
        <Task id="count" output={outputs.count} deps={{ analyze: outputs.analysis }}>
          {(deps) => ({ issues: deps.analyze.issues.length })}
        </Task>
      </Workflow>
    ));
    expect((await runWorkflow(wf, { input: {} })).status).toBe("finished");
    expect(sql(dbPath, "SELECT node_id, issues FROM count")).toEqual([{ node_id: "count", issues: 1 }]);
  });

  test("needs maps a deps key to the real upstream task id", async () => {
    const { Workflow, Task, smithers, outputs } = createSmithers(schemas, { dbPath: tempDbPath() });
    const wf = smithers(() => (
      <Workflow name="remap">
        <Task id="parse-analysis" output={outputs.analysis}>
          {{ summary: "remapped", issues: [] }}
        </Task>
        <Task id="review" output={outputs.review} needs={{ analysis: "parse-analysis" }} deps={{ analysis: outputs.analysis }}>
          {(deps) => ({ verdict: deps.analysis.summary })}
        </Task>
      </Workflow>
    ));
    expect(await runWorkflow(wf, { input: {} })).toMatchObject({ status: "finished", output: { verdict: "remapped" } });
  });

  test("a deps key naming no task fails the run with DEPENDENCY_DEADLOCK instead of waiting forever", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers(schemas, { dbPath });
    const wf = smithers(() => (
      <Workflow name="typo">
        <Task id="analyze" output={outputs.analysis}>
          {{ summary: "s", issues: [] }}
        </Task>
        <Task id="review" output={outputs.review} deps={{ analyse: outputs.analysis }}>
          {(deps) => ({ verdict: deps.analyse.summary })}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect(result.error?.code).toBe("DEPENDENCY_DEADLOCK");
    expect(sql(dbPath, "SELECT count(*) AS n FROM review")).toEqual([{ n: 0 }]);
  });

  test("an upstream that ends without a row (failed under continueOnFail) is a DEPENDENCY_DEADLOCK naming it; with depsOptional the task runs without it", async () => {
    for (const optional of [false, true]) {
      const dbPath = tempDbPath();
      const { Workflow, Task, smithers, outputs } = createSmithers(schemas, { dbPath });
      const wf = smithers(() => (
        <Workflow name="optional">
          <Task id="analyze" output={outputs.analysis} continueOnFail noRetry>
            {() => {
              throw new Error("analyzer crashed");
            }}
          </Task>
          {optional ? (
            <Task id="review" output={outputs.review} deps={{ analyze: outputs.analysis }} depsOptional>
              {(deps) => ({ verdict: deps.analyze ? "reviewed" : "no analysis" })}
            </Task>
          ) : (
            <Task id="review" output={outputs.review} deps={{ analyze: outputs.analysis }}>
              {(deps) => ({ verdict: deps.analyze.summary })}
            </Task>
          )}
        </Workflow>
      ));
      const result = await runWorkflow(wf, { input: {} });
      if (optional) {
        expect(result).toMatchObject({ status: "finished", output: { verdict: "no analysis" } });
      } else {
        expect(result.error?.code).toBe("DEPENDENCY_DEADLOCK");
        expect(result.error?.message).toContain('"analyze"');
      }
    }
  });

  test("inside a Loop a dep in the same loop is the current iteration's row, and one outside the loop its only row", async () => {
    const dbPath = tempDbPath();
    const kit = createSmithers(
      { config: z.object({ region: z.string() }), draft: z.object({ n: z.number() }), note: z.object({ text: z.string() }) },
      { dbPath },
    );
    const { Workflow, Task, smithers, outputs } = kit;
    const wf = smithers((ctx) => (
      <Workflow name="loop-deps">
        <Task id="config" output={outputs.config}>
          {{ region: "eu-west-1" }}
        </Task>
        <Loop id="l" until={ctx.iterationCount(outputs.note, "note") >= 3} maxIterations={5}>
          <Task id="draft" output={outputs.draft}>
            {{ n: ctx.iteration * 10 }}
          </Task>
          <Task id="note" output={outputs.note} deps={{ config: outputs.config, draft: outputs.draft }}>
            {(deps) => ({ text: `${deps.config.region}:${deps.draft.n}` })}
          </Task>
        </Loop>
      </Workflow>
    ));
    expect((await runWorkflow(wf, { input: {} })).status).toBe("finished");
    expect(sql(dbPath, "SELECT iteration, text FROM note ORDER BY iteration")).toEqual([
      { iteration: 0, text: "eu-west-1:0" },
      { iteration: 1, text: "eu-west-1:10" },
      { iteration: 2, text: "eu-west-1:20" },
    ]);
  });
});

describe("an agent with a function child", () => {
  test("is refused at render (the function would run and the agent be ignored): a prompt comes from a plain deps callback", async () => {
    const { Workflow, Task, smithers, outputs } = createSmithers(schemas, { dbPath: tempDbPath() });
    const agent = scriptedAgent([{ verdict: "x" }]);
    const wf = smithers(() => (
      <Workflow name="async-prompt">
        <Task id="analyze" output={outputs.analysis}>
          {{ summary: "s", issues: [] }}
        </Task>
        <Task id="review" output={outputs.review} agent={agent} deps={{ analyze: outputs.analysis }}>
          {async (deps) => ({ verdict: `prompt ${deps.analyze.summary}` })}
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { input: {} });
    expect([result.error?.code, result.error?.details.prop]).toEqual(["INVALID_WORKFLOW", "agent"]);
    expect(agent.calls).toHaveLength(0);
  });
});

describe("needs", () => {
  test("needs alone orders execution like dependsOn", async () => {
    const { Workflow, Task, smithers, outputs } = createSmithers(schemas, { dbPath: tempDbPath() });
    const order: string[] = [];
    const wf = smithers(() => (
      <Workflow name="needs-order">
        <Parallel>
          <Task id="review" output={outputs.review} needs={{ input: "analyze" }}>
            {() => {
              order.push("review");
              return { verdict: "ok" };
            }}
          </Task>
          <Task id="analyze" output={outputs.analysis}>
            {async () => {
              await Bun.sleep(20);
              order.push("analyze");
              return { summary: "s", issues: [] };
            }}
          </Task>
        </Parallel>
      </Workflow>
    ));
    expect((await runWorkflow(wf, { input: {} })).status).toBe("finished");
    expect(order).toEqual(["analyze", "review"]);
  });

  test("malformed deps, needs or depsOptional fail the render with INVALID_WORKFLOW naming the prop; nothing runs", async () => {
    const dbPath = tempDbPath();
    const { Workflow, Task, smithers, outputs } = createSmithers(schemas, { dbPath });
    const bad: [Record<string, unknown>, string][] = [
      [{ deps: "analyze" }, "deps"],
      [{ deps: {} }, "deps"],
      [{ needs: { a: 3 } }, "needs"],
      [{ depsOptional: true }, "depsOptional"],
    ];
    for (const [props, prop] of bad) {
      const wf = smithers(() => (
        <Workflow name="bad">
          <Task id="first" output={outputs.review}>
            {{ verdict: "ran" }}
          </Task>
          <Task id="t" output={outputs.review} {...(props as object)}>
            {{ verdict: "x" }}
          </Task>
        </Workflow>
      ));
      const result = await runWorkflow(wf, { input: {} });
      expect([prop, result.error?.code, result.error?.details.prop]).toEqual([prop, "INVALID_WORKFLOW", prop]);
    }
    expect(sql(dbPath, "SELECT count(*) AS n FROM review")).toEqual([{ n: 0 }]);
  });
});
