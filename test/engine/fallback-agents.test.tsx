/** @jsxImportSource smithers-workflows */
/** `agent={[primary, secondary]}`: moving to the next agent on a failure, and waiting (waiting-rate) when every one is rate-limited. */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { SmithersError } from "../../src/errors/index.ts";
import { type Agent, createSmithers, runWorkflow } from "../../src/index.ts";
import { query, tempDbPath } from "../helpers.ts";

const rateLimited = (id: string, retryAfterMs: number, calls: string[], until: () => boolean = () => true): Agent => ({
  id,
  generate: async () => {
    calls.push(id);
    if (until()) throw new SmithersError("AGENT_RATE_LIMITED", `${id}: 429 Too Many Requests`, { retryAfterMs });
    return { text: JSON.stringify({ by: id }) };
  },
});
const answering = (id: string, calls: string[]): Agent => ({
  id,
  generate: async () => {
    calls.push(id);
    return { text: JSON.stringify({ by: id }) };
  },
});

function kitWith(dbPath: string, agents: Agent[], taskProps: { retries?: number } = {}) {
  const kit = createSmithers({ answer: z.object({ by: z.string() }) }, { dbPath });
  const wf = kit.smithers(() => (
    <kit.Workflow name="fallbacks">
      <kit.Task id="ask" output={kit.outputs.answer} agent={agents} {...taskProps}>
        Who answers?
      </kit.Task>
    </kit.Workflow>
  ));
  return { kit, wf };
}

type EventRow = { type: string; payload_json: string };
const fallbacks = async (dbPath: string, runId: string) =>
  (await query<EventRow>(dbPath, "SELECT type, payload_json FROM _smithers_events WHERE run_id = ? AND type = 'AgentFallback' ORDER BY seq", runId)).map(
    (e) => JSON.parse(e.payload_json) as Record<string, unknown>,
  );

describe("fallback agents", () => {
  test("a rate-limited primary hands the attempt to the next agent: one finished attempt, the answer is the fallback's, and an AgentFallback event names both and the code", async () => {
    const dbPath = tempDbPath();
    const calls: string[] = [];
    const { wf } = kitWith(dbPath, [rateLimited("primary", 30_000, calls), answering("secondary", calls)]);
    expect((await runWorkflow(wf, { runId: "fb-1" })).status).toBe("finished");
    expect(calls).toEqual(["primary", "secondary"]);
    expect(await query(dbPath, "SELECT by FROM answer WHERE run_id = 'fb-1'")).toEqual([{ by: "secondary" }]);
    expect(await query(dbPath, "SELECT attempt, state FROM _smithers_attempts WHERE run_id = 'fb-1'")).toEqual([{ attempt: 1, state: "finished" }]);
    expect(await fallbacks(dbPath, "fb-1")).toEqual([
      { nodeId: "ask", iteration: 0, attempt: 1, fromIndex: 0, toIndex: 1, fromAgent: "primary", toAgent: "secondary", code: "AGENT_RATE_LIMITED" },
    ]);
  });

  test("an auth failure moves on too, and the event carries its code", async () => {
    const dbPath = tempDbPath();
    const calls: string[] = [];
    const refused: Agent = {
      id: "expired-key",
      generate: async () => {
        calls.push("expired-key");
        throw new SmithersError("AGENT_AUTH_FAILED", "401 invalid x-api-key");
      },
    };
    const { wf } = kitWith(dbPath, [refused, answering("backup", calls)]);
    expect((await runWorkflow(wf, { runId: "fb-2" })).status).toBe("finished");
    expect((await fallbacks(dbPath, "fb-2")).map((f) => [f.fromAgent, f.toAgent, f.code])).toEqual([["expired-key", "backup", "AGENT_AUTH_FAILED"]]);
  });

  test("every agent rate-limited: the node waits (waiting-rate, until the soonest delay any agent named) instead of failing, spends no retry, and a resume after it finishes", async () => {
    const dbPath = tempDbPath();
    const calls: string[] = [];
    let limited = true;
    const { wf } = kitWith(dbPath, [rateLimited("primary", 400, calls, () => limited), rateLimited("secondary", 200, calls, () => limited)], { retries: 0 });
    const first = await runWorkflow(wf, { runId: "fb-3", waitInPlaceMs: 0 });
    expect(first.status).toBe("waiting-rate");
    expect(calls).toEqual(["primary", "secondary"]);
    const [attempt] = await query<{ state: string; finished_at_ms: number; error_json: string }>(
      dbPath,
      "SELECT state, finished_at_ms, error_json FROM _smithers_attempts WHERE run_id = 'fb-3'",
    );
    expect(attempt!.state).toBe("failed");
    expect(JSON.parse(attempt!.error_json)).toMatchObject({ code: "AGENT_RATE_LIMITED", everyAgent: true, retryAfterMs: 200 });
    const [node] = await query<{ state: string; wake_at_ms: number }>(dbPath, "SELECT state, wake_at_ms FROM _smithers_nodes WHERE run_id = 'fb-3'");
    expect(node!.state).toBe("waiting-rate");
    expect(Number(node!.wake_at_ms) - Number(attempt!.finished_at_ms)).toBeGreaterThanOrEqual(200);
    expect(Number(node!.wake_at_ms) - Number(attempt!.finished_at_ms)).toBeLessThan(1_000);
    const [run] = await query<{ status: string; wake_at_ms: number }>(dbPath, "SELECT status, wake_at_ms FROM _smithers_runs WHERE run_id = 'fb-3'");
    expect([run!.status, Number(run!.wake_at_ms)]).toEqual(["waiting-rate", Number(node!.wake_at_ms)]);

    // Resumed before the window: it waits again, calling no agent.
    expect((await runWorkflow(wf, { runId: "fb-3", resume: true, waitInPlaceMs: 0 })).status).toBe("waiting-rate");
    expect(calls).toHaveLength(2);
    limited = false;
    await Bun.sleep(Math.max(0, Number(node!.wake_at_ms) - Date.now()) + 20);
    expect((await runWorkflow(wf, { runId: "fb-3", resume: true })).status).toBe("finished");
    expect(await query(dbPath, "SELECT attempt, state FROM _smithers_attempts WHERE run_id = 'fb-3' ORDER BY attempt")).toEqual([
      { attempt: 1, state: "failed" },
      { attempt: 2, state: "finished" },
    ]);
    expect(await query(dbPath, "SELECT by FROM answer WHERE run_id = 'fb-3'")).toEqual([{ by: "primary" }]);
  });

  test("a short rate window is waited out in place: the run finishes in one call", async () => {
    const dbPath = tempDbPath();
    const calls: string[] = [];
    let tries = 0;
    const { wf } = kitWith(dbPath, [rateLimited("a", 50, calls, () => tries++ < 2), rateLimited("b", 80, calls, () => tries++ < 2)]);
    expect((await runWorkflow(wf, { runId: "fb-4" })).status).toBe("finished");
    expect(await query(dbPath, "SELECT attempt, state FROM _smithers_attempts WHERE run_id = 'fb-4' ORDER BY attempt")).toEqual([
      { attempt: 1, state: "failed" },
      { attempt: 2, state: "finished" },
    ]);
  });

  test("one agent alone keeps the retry rule: its rate limit is retried after the delay it names while retries remain, then the task fails", async () => {
    const dbPath = tempDbPath();
    const calls: string[] = [];
    const { wf } = kitWith(dbPath, [rateLimited("only", 20, calls)], { retries: 1 });
    const result = await runWorkflow(wf, { runId: "fb-5" });
    expect([result.status, result.error?.code]).toEqual(["failed", "AGENT_RATE_LIMITED"]);
    expect(calls).toEqual(["only", "only"]);
  });
});
