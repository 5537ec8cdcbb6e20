/** An agent's own error code reaches the task, and decides whether the engine retries. */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers, runWorkflow, SmithersError, type Agent } from "../../src/index.ts";
import { sql, tempDbPath } from "../helpers.ts";

function failing(code: "AGENT_AUTH_FAILED" | "AGENT_CLI_NOT_FOUND" | "AGENT_TIMEOUT" | "INVALID_OPTION" | "UNSUPPORTED_SCHEMA"): Agent & { calls: number } {
  const agent = {
    calls: 0,
    generate: async () => {
      agent.calls++;
      throw new SmithersError(code, `failed with ${code}`);
    },
  };
  return agent;
}

describe("agent error codes", () => {
  for (const code of ["AGENT_AUTH_FAILED", "AGENT_CLI_NOT_FOUND", "INVALID_OPTION", "UNSUPPORTED_SCHEMA"] as const) {
    test(`${code} fails the task at once: no retry could mend it`, async () => {
      const dbPath = tempDbPath();
      const { smithers, Workflow, Task, outputs } = createSmithers({ out: z.object({ ok: z.boolean() }) }, { dbPath });
      const agent = failing(code);
      const wf = smithers(() => (
        <Workflow name="auth">
          <Task id="t" output={outputs.out} agent={agent} retries={3}>
            Go.
          </Task>
        </Workflow>
      ));
      const result = await runWorkflow(wf, { runId: "r" });
      expect(result.error?.code).toBe(code);
      expect(agent.calls).toBe(1);
      expect(sql(dbPath, "SELECT attempt, state FROM _smithers_attempts")).toEqual([{ attempt: 1, state: "failed" }]);
    });
  }

  test("AGENT_TIMEOUT (the agent's own time limit) keeps its code and is retried", async () => {
    const dbPath = tempDbPath();
    const { smithers, Workflow, Task, outputs } = createSmithers({ out: z.object({ ok: z.boolean() }) }, { dbPath });
    const agent = failing("AGENT_TIMEOUT");
    const wf = smithers(() => (
      <Workflow name="slow">
        <Task id="t" output={outputs.out} agent={agent} retries={1} retryPolicy={{ initialDelayMs: 1 }}>
          Go.
        </Task>
      </Workflow>
    ));
    const result = await runWorkflow(wf, { runId: "r" });
    expect(result.error?.code).toBe("AGENT_TIMEOUT");
    expect(agent.calls).toBe(2);
  });
});
