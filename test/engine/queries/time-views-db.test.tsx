/** @jsxImportSource smithers-workflows */
/** The waterfall and runs-over-time reads against a real database (SQLite, and PostgreSQL in the PostgreSQL engine suite). */
import { expect, test } from "bun:test";
import { z } from "zod";
import { runs } from "../../../src/db/index.ts";
import { runActivity, runWaterfall } from "../../../src/engine/index.ts";
import { approve, createSmithers, runWorkflow } from "../../../src/index.ts";
import { query, tempDbPath } from "../../helpers.ts";

test("a run with a retry, an approval wait and an agent's cost: its waterfall bars follow the attempt rows, and the activity counts it and its spend", async () => {
  const dbPath = tempDbPath();
  const kit = createSmithers({ out: z.object({ n: z.number() }) }, { dbPath });
  let tries = 0;
  const agent = { id: "priced", generate: async () => ({ text: '{"n": 3}', usage: { inputTokens: 10, outputTokens: 5, costUsd: 0.25, model: "m-1" } }) };
  const wf = kit.smithers(() => (
    <kit.Workflow name="timed">
      <kit.Sequence>
        <kit.Task id="flaky" output={kit.outputs.out} retries={1} retryPolicy={{ initialDelayMs: 5, maxDelayMs: 5 }}>
          {() => {
            if (tries++ === 0) throw new Error("first try fails");
            return { n: 1 };
          }}
        </kit.Task>
        <kit.Task id="gate" output={kit.outputs.out} needsApproval>
          {{ n: 2 }}
        </kit.Task>
        <kit.Task id="ask" output={kit.outputs.out} agent={agent}>
          Give n.
        </kit.Task>
      </kit.Sequence>
    </kit.Workflow>
  ));
  expect((await runWorkflow(wf, { runId: "tv" })).status).toBe("waiting-approval");
  await approve(kit.smithersDb, { runId: "tv", nodeId: "gate" });
  expect((await runWorkflow(wf, { runId: "tv", resume: true })).status).toBe("finished");

  const run = (await runs.getRun(kit.smithersDb, "tv"))!;
  const w = await runWaterfall(kit.smithersDb, run);
  const rows = await query<{ node_id: string; attempt: number; state: string; started_at_ms: number; finished_at_ms: number }>(
    dbPath,
    "SELECT node_id, attempt, state, started_at_ms, finished_at_ms FROM _smithers_attempts WHERE run_id = 'tv' ORDER BY started_at_ms, attempt",
  );
  const running = w.bars.filter((b) => b.kind === "running");
  expect(running.map((b) => [b.nodeId, b.attempt, b.state, b.startMs, b.endMs])).toEqual(
    rows.map((r) => [r.node_id, Number(r.attempt), r.state, Number(r.started_at_ms), Number(r.finished_at_ms)]),
  );
  expect(w.bars.find((b) => b.state === "failed")!.error).toMatchObject({ code: "TASK_FAILED" });
  const retry = w.bars.find((b) => b.kind === "retry-wait")!;
  expect([retry.nodeId, retry.startMs, retry.endMs]).toEqual(["flaky", Number(rows[0]!.finished_at_ms), Number(rows[1]!.started_at_ms)]);
  const wait = w.bars.find((b) => b.kind === "approval")!;
  expect(wait.nodeId).toBe("gate");
  expect(wait.endMs).not.toBeNull();
  expect(w.bars.find((b) => b.nodeId === "ask")!.usage).toMatchObject({ costUsd: 0.25, inputTokens: 10, outputTokens: 5 });

  const a = await runActivity(kit.smithersDb, { minutes: 5, days: 2 });
  expect(a.perMinute).toHaveLength(5);
  expect(a.perMinute.reduce((n, m) => n + m.started, 0)).toBe(1);
  expect(a.perMinute.reduce((n, m) => n + m.finished, 0)).toBe(1);
  expect(a.spendPerDay).toEqual([{ dayMs: Math.floor(Number(rows.at(-1)!.started_at_ms) / 86_400_000) * 86_400_000, costUsd: 0.25 }]);
});
