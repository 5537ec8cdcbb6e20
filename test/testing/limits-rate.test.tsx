/** @jsxImportSource smithers-workflows */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { createSmithers, Parallel, SmithersError, type Agent } from "smithers-workflows";
import { testWorkflow } from "smithers-workflows/testing";
import { query } from "../helpers.ts";

const MINUTE = 60_000;

describe("limits perMinute", () => {
  test("a rate limit of 5 per minute lets a 12-task run start 5 tasks a minute on the virtual clock, each wait stored as waiting-rate with its time", async () => {
    const { Workflow, Task, smithers, outputs } = createSmithers({ started: z.object({ at: z.number() }) }, { limits: { provider: { perMinute: 5 } } });
    const workflow = smithers(() => (
      <Workflow name="rated">
        <Parallel>
          {Array.from({ length: 12 }, (_, i) => (
            <Task id={`call${i}`} output={outputs.started} concurrencyKey="provider">
              {() => ({ at: t.clock.now() })}
            </Task>
          ))}
        </Parallel>
      </Workflow>
    ));
    await using t = await testWorkflow(workflow, { db: "file" });
    const start = t.clock.now();
    const first = await t.run({});
    expect(first.status).toBe("waiting-rate");
    const waiting = await query<{ state: string; wake_at_ms: number }>(
      t.db.target,
      "SELECT state, wake_at_ms FROM _smithers_nodes WHERE state = 'waiting-rate'",
    );
    expect(waiting.length).toBe(7);
    expect(new Set(waiting.map((n) => Number(n.wake_at_ms)))).toEqual(new Set([start + MINUTE]));
    await t.clock.advance(MINUTE);
    expect((await t.resume(first.runId)).status).toBe("waiting-rate");
    await t.clock.advance(MINUTE);
    expect((await t.resume(first.runId)).status).toBe("finished");
    const starts = Object.values(t.outputs(first.runId)).map((row) => Number(row.at) - start);
    starts.sort((a, b) => a - b);
    expect(starts).toEqual([0, 0, 0, 0, 0, MINUTE, MINUTE, MINUTE, MINUTE, MINUTE, 2 * MINUTE, 2 * MINUTE]);
  });

  test("a provider's 429 with retry-after holds every task of the key until then", async () => {
    const { Workflow, Task, Sequence, smithers, outputs } = createSmithers(
      { started: z.object({ at: z.number() }) },
      { limits: { provider: { perMinute: 100 } } },
    );
    const workflow = smithers(() => (
      <Workflow name="limited">
        <Sequence>
          <Task id="refused" output={outputs.started} concurrencyKey="provider" retries={0} continueOnFail>
            {() => {
              throw new SmithersError("AGENT_RATE_LIMITED", "429 from the provider", { retryAfterMs: 30_000 });
            }}
          </Task>
          <Task id="next" output={outputs.started} concurrencyKey="provider">
            {() => ({ at: t.clock.now() })}
          </Task>
        </Sequence>
      </Workflow>
    ));
    await using t = await testWorkflow(workflow, { db: "file" });
    const start = t.clock.now();
    const first = await t.run({});
    expect(first.status).toBe("waiting-rate");
    expect(await query(t.db.target, "SELECT state, wake_at_ms FROM _smithers_nodes WHERE node_id = 'next'")).toEqual([
      { state: "waiting-rate", wake_at_ms: start + 30_000 },
    ]);
    await t.clock.advance(30_000);
    expect((await t.resume(first.runId)).status).toBe("finished");
    expect(t.output(first.runId, "next")).toEqual({ at: start + 30_000 });
  });

  test("tokensPerMinute counts the tokens an agent reported: once a minute's tokens reach it, the next task waits until the oldest leave the window", async () => {
    const { Workflow, Task, Sequence, smithers, outputs } = createSmithers(
      { note: z.object({ text: z.string() }) },
      { limits: { llm: { tokensPerMinute: 200 } } },
    );
    const metered: Agent = {
      id: "metered",
      generate: async () => ({ text: '{"text": "ok"}', usage: { inputTokens: 100, outputTokens: 20 } }),
    };
    const workflow = smithers(() => (
      <Workflow name="tokens">
        <Sequence>
          {["one", "two", "three"].map((id) => (
            <Task id={id} output={outputs.note} agent={metered} concurrencyKey="llm">
              Write a note.
            </Task>
          ))}
        </Sequence>
      </Workflow>
    ));
    await using t = await testWorkflow(workflow, { db: "file" });
    const start = t.clock.now();
    const first = await t.run({});
    // 120 + 120 tokens in the minute: "three" may start once the first 120 left it.
    expect(first.status).toBe("waiting-rate");
    expect(await query(t.db.target, "SELECT node_id, state, wake_at_ms FROM _smithers_nodes WHERE state <> 'finished'")).toEqual([
      { node_id: "three", state: "waiting-rate", wake_at_ms: start + MINUTE },
    ]);
    expect(await query(t.db.target, "SELECT kind, sum(amount) AS total FROM _smithers_rate_usage GROUP BY kind")).toEqual([{ kind: "tokens", total: 240 }]);
    await t.clock.advance(MINUTE);
    expect((await t.resume(first.runId)).status).toBe("finished");
  });
});
