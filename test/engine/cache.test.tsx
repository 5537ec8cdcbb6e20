/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers, runWorkflow, scriptedAgent, type SmithersEvent } from "../../src/index.ts";
import type { CachePolicy } from "../../src/index.ts";
import { execute, query, refuseInserts, tablesReady, tempDbPath } from "../helpers.ts";

const outSchema = z.object({ n: z.number() });

/** A workflow `name` with one cached compute task `id`, counting how often its body ran. */
function counted(dbPath: string, name: string, cache: CachePolicy, id = "work") {
  const kit = createSmithers({ out: outSchema }, { dbPath });
  const runs = { count: 0 };
  const wf = kit.smithers(() => (
    <kit.Workflow name={name}>
      <kit.Task id={id} output={kit.outputs.out} cache={cache}>
        {() => ({ n: ++runs.count })}
      </kit.Task>
    </kit.Workflow>
  ));
  return { kit, wf, runs };
}

describe("Task cache", () => {
  test("a hit finishes the node with an attempt marked cached and a NodeFinished event saying so; the miss before it is not marked", async () => {
    const dbPath = tempDbPath();
    const { wf, runs } = counted(dbPath, "w", { by: () => "k" });
    const events: SmithersEvent[] = [];
    await runWorkflow(wf, { runId: "miss" });
    await runWorkflow(wf, { runId: "hit", onEvent: (e) => events.push(e) });
    expect(runs.count).toBe(1);
    expect(await query(dbPath, "SELECT run_id, attempt, state, cached, response_text FROM _smithers_attempts ORDER BY run_id DESC")).toEqual([
      { run_id: "miss", attempt: 1, state: "finished", cached: 0, response_text: null },
      { run_id: "hit", attempt: 1, state: "finished", cached: 1, response_text: null },
    ]);
    expect(await query(dbPath, "SELECT run_id, node_id, state FROM _smithers_nodes ORDER BY run_id")).toEqual([
      { run_id: "hit", node_id: "work", state: "finished" },
      { run_id: "miss", node_id: "work", state: "finished" },
    ]);
    expect(await query(dbPath, "SELECT run_id, n FROM out ORDER BY run_id")).toEqual([
      { run_id: "hit", n: 1 },
      { run_id: "miss", n: 1 },
    ]);
    expect(events.find((e) => e.type === "NodeFinished")).toMatchObject({ nodeId: "work", attempt: 1, cached: true });
  });

  test('scope "run" shares an entry between the iterations of a loop, and not with the next run', async () => {
    const dbPath = tempDbPath();
    const kit = createSmithers({ out: outSchema }, { dbPath });
    let bodies = 0;
    const wf = kit.smithers((ctx) => (
      <kit.Workflow name="loop">
        <kit.Loop id="l" until={ctx.iterationCount(kit.outputs.out, "step") >= 3} maxIterations={5}>
          <kit.Task id="step" output={kit.outputs.out} cache={{ scope: "run" }}>
            {() => ({ n: ++bodies })}
          </kit.Task>
        </kit.Loop>
      </kit.Workflow>
    ));
    await runWorkflow(wf, { runId: "a" });
    await runWorkflow(wf, { runId: "b" });
    expect(bodies).toBe(2);
    expect(await query(dbPath, "SELECT run_id, iteration, n FROM out ORDER BY run_id, iteration")).toEqual([
      { run_id: "a", iteration: 0, n: 1 },
      { run_id: "a", iteration: 1, n: 1 },
      { run_id: "a", iteration: 2, n: 1 },
      { run_id: "b", iteration: 0, n: 2 },
      { run_id: "b", iteration: 1, n: 2 },
      { run_id: "b", iteration: 2, n: 2 },
    ]);
    const attempts = await query<{ run_id: string; cached: number }>(dbPath, "SELECT run_id, cached FROM _smithers_attempts ORDER BY run_id, iteration");
    expect(attempts.map((a) => `${a.run_id}:${a.cached}`)).toEqual(["a:0", "a:1", "a:1", "b:0", "b:1", "b:1"]);
  });

  test('scope "workflow" (the default) keeps workflows apart; scope "global" shares an entry between them', async () => {
    const dbPath = tempDbPath();
    const a = counted(dbPath, "first", { by: () => 1 });
    const b = counted(dbPath, "second", { by: () => 1 });
    await runWorkflow(a.wf);
    await runWorkflow(b.wf);
    expect([a.runs.count, b.runs.count]).toEqual([1, 1]);

    const g1 = counted(dbPath, "first", { by: () => 1, scope: "global" });
    const g2 = counted(dbPath, "second", { by: () => 1, scope: "global" });
    await runWorkflow(g1.wf);
    const shared = await runWorkflow(g2.wf);
    expect([g1.runs.count, g2.runs.count, shared.output]).toEqual([1, 0, { n: 1 }]);
    // One entry per workflow from the default scope, and one shared global entry, made by the first to run
    // (counted, not ordered by time: entries made within one millisecond tie).
    const entries = await query<{ workflow_name: string; n: number }>(
      dbPath,
      "SELECT workflow_name, count(*) AS n FROM _smithers_cache GROUP BY workflow_name ORDER BY workflow_name",
    );
    expect(entries.map((e) => [e.workflow_name, Number(e.n)])).toEqual([
      ["first", 2],
      ["second", 1],
    ]);
  });

  test("tasks with the same cache key share entries whatever their node ids", async () => {
    const dbPath = tempDbPath();
    const kit = createSmithers({ out: outSchema }, { dbPath });
    let bodies = 0;
    const wf = kit.smithers(() => (
      <kit.Workflow name="w">
        <kit.Task id="one" output={kit.outputs.out} cache={{ key: "shared" }}>
          {() => ({ n: ++bodies })}
        </kit.Task>
        <kit.Task id="two" output={kit.outputs.out} cache={{ key: "shared" }}>
          {() => ({ n: ++bodies })}
        </kit.Task>
        <kit.Task id="three" output={kit.outputs.out} cache={{ key: "other" }}>
          {() => ({ n: ++bodies })}
        </kit.Task>
      </kit.Workflow>
    ));
    await runWorkflow(wf);
    expect(await query(dbPath, "SELECT node_id, n FROM out ORDER BY node_id")).toEqual([
      { node_id: "one", n: 1 },
      { node_id: "three", n: 2 },
      { node_id: "two", n: 1 },
    ]);
  });

  test("an entry older than ttlMs is a miss and is replaced; a younger one is a hit", async () => {
    const dbPath = tempDbPath();
    const { wf, runs } = counted(dbPath, "w", { by: () => "k", ttlMs: 60_000 });
    await runWorkflow(wf);
    await runWorkflow(wf);
    expect(runs.count).toBe(1);
    await execute(dbPath, "UPDATE _smithers_cache SET created_at_ms = created_at_ms - 60000");
    const expired = await runWorkflow(wf);
    expect([runs.count, expired.output]).toEqual([2, { n: 2 }]);
    const [entry] = await query<{ age: number; payload_json: string }>(
      dbPath,
      "SELECT ? - created_at_ms AS age, payload_json FROM _smithers_cache",
      Date.now(),
    );
    expect(entry!.age).toBeLessThan(60_000);
    expect(entry!.payload_json).toBe('{"n":2}');
    expect((await runWorkflow(wf)).output).toEqual({ n: 2 });
    expect(runs.count).toBe(2);
  });

  test("cache.by gets the run's ctx at the task's iteration, with its node id and the outputs before it", async () => {
    const dbPath = tempDbPath();
    const kit = createSmithers({ input: z.object({ repo: z.string() }), out: outSchema }, { dbPath });
    const seen: unknown[] = [];
    const wf = kit.smithers(() => (
      <kit.Workflow name="w">
        <kit.Task id="first" output={kit.outputs.out}>
          {{ n: 41 }}
        </kit.Task>
        <kit.Task
          id="second"
          output={kit.outputs.out}
          cache={{
            by: (ctx) => {
              const key = { repo: ctx.input.repo, node: ctx.nodeId, iteration: ctx.iteration, before: ctx.output(kit.outputs.out, { nodeId: "first" }).n };
              seen.push(key);
              return key;
            },
          }}
        >
          {() => ({ n: 42 })}
        </kit.Task>
      </kit.Workflow>
    ));
    await runWorkflow(wf, { input: { repo: "acme/app" } });
    expect(seen).toEqual([{ repo: "acme/app", node: "second", iteration: 0, before: 41 }]);
  });

  test("the ids of a task's agents are part of the key: another agent is a miss", async () => {
    const dbPath = tempDbPath();
    const kit = createSmithers({ out: outSchema }, { dbPath });
    const build = (agent: ReturnType<typeof scriptedAgent>) =>
      kit.smithers(() => (
        <kit.Workflow name="w">
          <kit.Task id="ask" output={kit.outputs.out} agent={agent} cache={{ by: () => "same" }}>
            Give a number
          </kit.Task>
        </kit.Workflow>
      ));
    const claude = scriptedAgent(() => ({ n: 1 }), { id: "claude" });
    const codex = scriptedAgent(() => ({ n: 2 }), { id: "codex" });
    await runWorkflow(build(claude));
    await runWorkflow(build(claude));
    const other = await runWorkflow(build(codex));
    expect([claude.calls.length, codex.calls.length, other.output]).toEqual([1, 1, { n: 2 }]);
    expect(await query(dbPath, "SELECT agent_sig FROM _smithers_cache ORDER BY agent_sig")).toEqual([{ agent_sig: "claude" }, { agent_sig: "codex" }]);
  });

  test("a cached date field comes back as a Date that passes the schema", async () => {
    const dbPath = tempDbPath();
    const kit = createSmithers({ stamp: z.object({ at: z.date(), label: z.string() }) }, { dbPath });
    let bodies = 0;
    const wf = kit.smithers(() => (
      <kit.Workflow name="w">
        <kit.Task id="t" output={kit.outputs.stamp} cache={{ by: () => 1 }}>
          {() => ({ at: new Date(1_700_000_000_000 + bodies++), label: "x" })}
        </kit.Task>
      </kit.Workflow>
    ));
    await runWorkflow(wf);
    const second = await runWorkflow(wf);
    expect(bodies).toBe(1);
    expect(second.output).toEqual({ at: new Date(1_700_000_000_000), label: "x" });
  });

  test("<Workflow cache> caches agent tasks by prompt and iteration; a compute task without its own cache runs every time", async () => {
    const dbPath = tempDbPath();
    const kit = createSmithers({ input: z.object({ topic: z.string() }), out: outSchema }, { dbPath });
    const agent = scriptedAgent((_a, i) => ({ n: i }), { id: "a" });
    let computed = 0;
    const wf = kit.smithers((ctx) => (
      <kit.Workflow name="w" cache>
        <kit.Task id="ask" output={kit.outputs.out} agent={agent}>
          {`About ${ctx.input.topic}`}
        </kit.Task>
        <kit.Task id="count" output={kit.outputs.out}>
          {() => ({ n: ++computed })}
        </kit.Task>
      </kit.Workflow>
    ));
    for (const topic of ["x", "x", "y"]) await runWorkflow(wf, { input: { topic } });
    expect([agent.calls.length, computed]).toEqual([2, 3]);
    expect(await query(dbPath, "SELECT node_id, count(*) AS entries FROM _smithers_cache GROUP BY node_id")).toEqual([{ node_id: "ask", entries: 2 }]);
  });

  test("tasks without a cache policy leave _smithers_cache empty", async () => {
    const dbPath = tempDbPath();
    const kit = createSmithers({ out: outSchema }, { dbPath });
    const wf = kit.smithers(() => (
      <kit.Workflow name="w">
        <kit.Task id="t" output={kit.outputs.out}>
          {() => ({ n: 1 })}
        </kit.Task>
      </kit.Workflow>
    ));
    await runWorkflow(wf);
    await runWorkflow(wf);
    expect(await query(dbPath, "SELECT count(*) AS entries FROM _smithers_cache")).toEqual([{ entries: 0 }]);
  });
});

describe("Task cache: a key that cannot be made", () => {
  const cases: [string, CachePolicy["by"], string][] = [
    [
      "throws",
      () => {
        throw new Error("no repo");
      },
      "cache.by threw: no repo",
    ],
    ["returns undefined", () => undefined, "cache.by returned undefined"],
    ["returns a promise", () => Promise.resolve("k"), "cache.by returned a promise"],
    ["returns a BigInt", () => ({ size: 10n }), "a bigint at $.size"],
    ["returns a Map", () => ({ files: new Map() }), "a Map at $.files"],
    ["returns NaN", () => [1, Number.NaN], "NaN at $[1]"],
    [
      "returns a cycle",
      () => {
        const node: Record<string, unknown> = {};
        node.self = node;
        return node;
      },
      "a cycle at $.self",
    ],
  ];
  for (const [what, by, message] of cases) {
    test(`cache.by that ${what} fails the task with CACHE_KEY_FAILED, without a retry, running nothing and storing nothing`, async () => {
      const dbPath = tempDbPath();
      const kit = createSmithers({ out: outSchema }, { dbPath });
      let bodies = 0;
      const wf = kit.smithers(() => (
        <kit.Workflow name="w">
          <kit.Task id="t" output={kit.outputs.out} retries={2} retryPolicy={{ initialDelayMs: 1 }} cache={{ by }}>
            {() => ({ n: ++bodies })}
          </kit.Task>
        </kit.Workflow>
      ));
      const result = await runWorkflow(wf);
      expect([result.status, result.error?.code, bodies]).toEqual(["failed", "CACHE_KEY_FAILED", 0]);
      expect(result.error?.message).toContain(message);
      const attempts = await query<{ state: string; error_json: string }>(dbPath, "SELECT state, error_json FROM _smithers_attempts");
      expect(attempts.map((a) => [a.state, JSON.parse(a.error_json).code])).toEqual([["failed", "CACHE_KEY_FAILED"]]);
      expect(await query(dbPath, "SELECT (SELECT count(*) FROM out) AS outputs, (SELECT count(*) FROM _smithers_cache) AS entries")).toEqual([
        { outputs: 0, entries: 0 },
      ]);
    });
  }
});

describe("Task cache: crash safety", () => {
  test("an output row the database refuses leaves no cache entry; after the fix a resume stores both", async () => {
    const dbPath = tempDbPath();
    const { kit, wf, runs } = counted(dbPath, "w", { by: () => "k" });
    await tablesReady(kit.smithersDb); // opens the database and creates the tables
    const accept = await refuseInserts(dbPath, "out");
    const failed = await runWorkflow(wf, { runId: "r" });
    expect(failed.status).toBe("failed");
    expect(await query(dbPath, "SELECT (SELECT count(*) FROM out) AS outputs, (SELECT count(*) FROM _smithers_cache) AS entries")).toEqual([
      { outputs: 0, entries: 0 },
    ]);
    await accept();
    expect((await runWorkflow(wf, { runId: "r", resume: true })).status).toBe("finished");
    expect(runs.count).toBe(2);
    expect(await query(dbPath, "SELECT n, (SELECT payload_json FROM _smithers_cache) AS payload FROM out")).toEqual([{ n: 2, payload: '{"n":2}' }]);
  });

  test("a cache entry the database refuses leaves no output row either; the node is not finished", async () => {
    const dbPath = tempDbPath();
    const { kit, wf } = counted(dbPath, "w", { by: () => "k" });
    await tablesReady(kit.smithersDb);
    const accept = await refuseInserts(dbPath, "_smithers_cache");
    const failed = await runWorkflow(wf, { runId: "r" });
    expect(failed.status).toBe("failed");
    expect(await query(dbPath, "SELECT count(*) AS outputs FROM out")).toEqual([{ outputs: 0 }]);
    expect(await query(dbPath, "SELECT state FROM _smithers_nodes")).toEqual([{ state: "failed" }]);
    await accept();
    expect((await runWorkflow(wf, { runId: "r", resume: true })).status).toBe("finished");
    expect(await query(dbPath, "SELECT (SELECT count(*) FROM out) AS outputs, (SELECT count(*) FROM _smithers_cache) AS entries")).toEqual([
      { outputs: 1, entries: 1 },
    ]);
  });
});
