/**
 * Usage of attempts that fail, time out or are stopped still counts: against the run's limits,
 * on the attempt rows and in the run's totals.
 */
import { describe, expect, test } from "bun:test";
import { ToolLoopAgent } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { z } from "zod";
import { ClaudeCodeAgent, createSmithers, runWorkflow, SmithersError, type Agent } from "../../src/index.ts";
import { fakeCli } from "./cli/fake-cli.ts";
import { sql, tempDbPath } from "../helpers.ts";

const out = z.object({ ok: z.boolean() });

function kit() {
  const dbPath = tempDbPath();
  return { dbPath, ...createSmithers({ out }, { dbPath }) };
}

describe("spend of failed and stopped attempts", () => {
  test("a CLI that fails after working: its reported cost counts, and the retries stop at the limit", async () => {
    const { dbPath, smithers, Workflow, Task, outputs } = kit();
    const fake = fakeCli("error-result");
    const claude = new ClaudeCodeAgent({ env: fake.env, binary: `${fake.env.PATH.split(":")[0]}/claude` });
    const wf = smithers(() => (
      <Workflow name="failing">
        <Task id="t" output={outputs.out} agent={claude} retries={5} retryPolicy={{ initialDelayMs: 1 }}>
          Go.
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { runId: "r", maxCostUsd: 0.03 });
    expect(result.error?.code).toBe("BUDGET_EXCEEDED");
    // 900 fresh + 100 cached input tokens: input counts cached ones too.
    expect(sql(dbPath, "SELECT attempt, state, cost_usd, input_tokens FROM _smithers_attempts ORDER BY attempt")).toEqual([
      { attempt: 1, state: "failed", cost_usd: 0.02, input_tokens: 1000 },
      { attempt: 2, state: "failed", cost_usd: 0.02, input_tokens: 1000 },
    ]);
    expect(result.usage?.costUsd).toBeCloseTo(0.04, 10);
  });

  test("an agent stopped by its task's timeout counts the usage it had reported", async () => {
    const { dbPath, smithers, Workflow, Task, outputs } = kit();
    const agent: Agent = {
      generate: ({ abortSignal, onEvent }) => {
        onEvent?.({ type: "usage", usage: { inputTokens: 50, outputTokens: 5, costUsd: 0.5, model: "m" } });
        return new Promise((_, reject) => abortSignal?.addEventListener("abort", () => reject(abortSignal.reason)));
      },
    };
    const wf = smithers(() => (
      <Workflow name="slow">
        <Task id="t" output={outputs.out} agent={agent} timeoutMs={30} retries={3} retryPolicy={{ initialDelayMs: 1 }}>
          Go.
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { runId: "r", maxCostUsd: 1 });
    expect(result.error?.code).toBe("BUDGET_EXCEEDED");
    expect(sql(dbPath, "SELECT attempt, state, cost_usd FROM _smithers_attempts ORDER BY attempt")).toEqual([
      { attempt: 1, state: "failed", cost_usd: 0.5 },
      { attempt: 2, state: "failed", cost_usd: 0.5 },
    ]);
  });

  test("an AI SDK agent timed out in its second step counts its first step", async () => {
    const { dbPath, smithers, Workflow, Task, outputs } = kit();
    let step = 0;
    const model = new MockLanguageModelV4({
      doGenerate: async ({ abortSignal }) => {
        if (step++ === 0) {
          return {
            content: [{ type: "tool-call" as const, toolCallId: "c1", toolName: "noop", input: "{}" }],
            finishReason: { unified: "tool-calls" as const, raw: "tool_use" },
            usage: { inputTokens: { total: 70, noCache: 70, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 7, text: 7, reasoning: 0 } },
            warnings: [],
          };
        }
        return new Promise((_, reject) => abortSignal?.addEventListener("abort", () => reject(abortSignal.reason)));
      },
    });
    const noop = { description: "nothing", inputSchema: z.object({}), execute: async () => "ok" };
    const wf = smithers(() => (
      <Workflow name="sdk-slow">
        <Task id="t" output={outputs.out} agent={new ToolLoopAgent({ model, tools: { noop } })} timeoutMs={100} retries={0}>
          Go.
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { runId: "r" });
    expect(result.error?.code).toBe("TASK_TIMEOUT");
    expect(sql(dbPath, "SELECT input_tokens, output_tokens FROM _smithers_attempts")).toEqual([{ input_tokens: 70, output_tokens: 7 }]);
  });

  test("an error carrying details.usage counts; a call with tokens but no cost makes a cost limit refuse the next start", async () => {
    const { smithers, Workflow, Task, outputs } = kit();
    let calls = 0;
    const agent: Agent = {
      generate: async () => {
        calls++;
        throw new SmithersError("AGENT_CLI_EXIT", "crashed", { usage: { inputTokens: 10, outputTokens: 1, model: "unpriced-model" } });
      },
    };
    const wf = smithers(() => (
      <Workflow name="unpriced">
        <Task id="t" output={outputs.out} agent={agent} retries={3} retryPolicy={{ initialDelayMs: 1 }}>
          Go.
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { runId: "r", maxCostUsd: 5 });
    expect(result.error?.code).toBe("BUDGET_UNPRICED");
    expect(calls).toBe(1);
    expect(result.usage).toMatchObject({ inputTokens: 10, outputTokens: 1 });
  });
});

describe("a task held back by the budget", () => {
  const costly: Agent = { generate: async () => ({ text: '{"ok": true}', usage: { inputTokens: 1, outputTokens: 1, costUsd: 1 } }) };

  test("waits for the other work in flight and for a retry's backoff before the run fails", async () => {
    const { dbPath, smithers, Workflow, Task, Sequence, Parallel, outputs } = kit();
    let computeAttempts = 0;
    const wf = smithers(() => (
      <Workflow name="held">
        <Parallel>
          <Sequence>
            <Task id="a" output={outputs.out} agent={costly}>
              First.
            </Task>
            <Task id="b" output={outputs.out} agent={costly}>
              Second.
            </Task>
          </Sequence>
          <Task id="slow" output={outputs.out} retries={1} retryPolicy={{ initialDelayMs: 150 }}>
            {async () => {
              await Bun.sleep(50);
              if (++computeAttempts === 1) throw new Error("flaky");
              return { ok: true };
            }}
          </Task>
        </Parallel>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { runId: "h", maxCostUsd: 1 });
    expect(result.error?.code).toBe("BUDGET_EXCEEDED");
    expect(computeAttempts).toBe(2);
    expect(sql(dbPath, "SELECT node_id, state FROM _smithers_nodes ORDER BY node_id")).toEqual([
      { node_id: "a", state: "finished" },
      { node_id: "slow", state: "finished" },
    ]);
  });

  test("a held task the next render no longer mounts does not fail the run", async () => {
    const { smithers, Workflow, Task, outputs } = kit();
    const wf = smithers((ctx) => {
      const first = ctx.outputMaybe(outputs.out, { nodeId: "a" });
      return (
        <Workflow name="unmounted">
          <Task id="a" output={outputs.out} agent={costly}>
            First.
          </Task>
          {first ? null : (
            <Task id="b" output={outputs.out} agent={costly} dependsOn={["a"]}>
              Only before a has finished.
            </Task>
          )}
        </Workflow>
      );
    });
    const result = await runWorkflow(wf, { runId: "u", maxCostUsd: 1 });
    expect(result.status).toBe("finished");
  });
});

describe("limits across a chain of runs and into child runs", () => {
  const dollar: Agent & { calls: number } = {
    calls: 0,
    generate: async () => {
      dollar.calls++;
      return { text: '{"ok": true}', usage: { inputTokens: 10, outputTokens: 1, costUsd: 1 } };
    },
  };

  test("a loop that continues as new keeps one budget for the whole chain", async () => {
    dollar.calls = 0;
    const { smithers, Workflow, Task, Loop, outputs } = kit();
    const wf = smithers(() => (
      <Workflow name="chain">
        <Loop id="l" until={false} maxIterations={10} continueAsNewEvery={1}>
          <Task id="tick" output={outputs.out} agent={dollar}>
            Tick.
          </Task>
        </Loop>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { runId: "c", maxCostUsd: 2.5 });
    expect(result.error?.code).toBe("BUDGET_EXCEEDED");
    expect(dollar.calls).toBe(3); // $0, $1, $2 < $2.5 let three start; $3 stops the fourth
    expect(result.usage?.costUsd).toBe(3);
    expect(result.runId).not.toBe("c"); // the error came from a later run of the chain
  });

  test("a subflow's child spends from its parent's budget, and the parent counts what the child spent", async () => {
    dollar.calls = 0;
    const child = createSmithers({ out });
    const childWf = child.smithers(() => (
      <child.Workflow name="child">
        <child.Sequence>
          {["one", "two", "three"].map((id) => (
            <child.Task key={id} id={id} output={child.outputs.out} agent={dollar}>
              {id}
            </child.Task>
          ))}
        </child.Sequence>
      </child.Workflow>
    ));
    const { dbPath, smithers, Workflow, Task, Subflow, outputs } = kit();
    const wf = smithers(() => (
      <Workflow name="parent">
        <Task id="first" output={outputs.out} agent={dollar}>
          First.
        </Task>
        <Subflow id="sub" workflow={childWf} output={outputs.out} dependsOn={["first"]} />
      </Workflow>
    ));
    const result = await runWorkflow(wf, { runId: "p", maxCostUsd: 2.5 });
    expect(result.error?.code).toBe("BUDGET_EXCEEDED");
    expect(dollar.calls).toBe(3); // the parent's one, then the child's two with $1.5 left
    expect(result.usage?.costUsd).toBe(3);
    expect(sql(dbPath, "SELECT run_id, count(*) AS n, sum(cost_usd) AS cost FROM _smithers_attempts GROUP BY run_id ORDER BY run_id")).toEqual([
      { run_id: "p", n: 2, cost: 3 },
      { run_id: "p/sub#0", n: 2, cost: 2 },
    ]);
  });
});
