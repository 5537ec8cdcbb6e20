/** createMetrics over a database: each attempt outcome, the waits a run stops at, and a read that fails dropping its sample only. */
import { afterEach, expect, test } from "bun:test";
import { attempts, limits, openSmithersDb, runs, type SmithersDb } from "../../../src/db/index.ts";
import { createMetrics } from "../../../src/engine/index.ts";
import { sample } from "../../support/prom-text.ts";
import { tempDbPath } from "../../helpers.ts";

const opened: SmithersDb[] = [];
afterEach(async () => {
  for (const db of opened.splice(0)) await db.close().catch(() => undefined);
});

async function dbWithRun(): Promise<SmithersDb> {
  const db = openSmithersDb(tempDbPath());
  opened.push(db);
  await runs.insertRun(db, { runId: "r1", workflowName: "deploy", status: "running", createdAtMs: 1 });
  for (const attempt of [1, 2, 3, 4])
    await db.write("attempt", (q) => attempts.insertAttempt(q, { runId: "r1", nodeId: "build", iteration: 0, attempt, state: "running", startedAtMs: 1 }));
  return db;
}

const at = { runId: "r1", timestampMs: 1, nodeId: "build", iteration: 0 };

test("finished, failed, cancelled and abandoned attempts are counted under their run's workflow; durations where the event has one", async () => {
  const metrics = await createMetrics(await dbWithRun());
  metrics.observe({ type: "NodeFailed", ...at, attempt: 1, durationMs: 1500, error: { code: "TASK_FAILED" } });
  metrics.observe({ type: "NodeRetrying", ...at, attempt: 1, delayMs: 0, retryAtMs: 1 });
  metrics.observe({ type: "NodeCancelled", ...at, attempt: 2, durationMs: 20 });
  metrics.observe({ type: "NodeAbandoned", ...at, attempt: 3, reason: "process-died" });
  metrics.observe({ type: "NodeFinished", ...at, attempt: 4, durationMs: 250 });
  metrics.observe({ type: "RunWaiting", runId: "r1", timestampMs: 1, status: "waiting-approval" });
  const body = (await metrics.scrape()).body;
  for (const outcome of ["finished", "failed", "cancelled", "abandoned"]) {
    expect(sample(body, "smithers_task_attempts_total", { workflow: "deploy", outcome })).toBe(1);
  }
  expect(sample(body, "smithers_task_attempt_duration_seconds_sum", { workflow: "deploy", outcome: "failed" })).toBe(1.5);
  expect(sample(body, "smithers_task_attempt_duration_seconds_bucket", { workflow: "deploy", outcome: "finished", le: "0.5" })).toBe(1);
  expect(sample(body, "smithers_task_attempt_duration_seconds_bucket", { workflow: "deploy", outcome: "finished", le: "0.1" })).toBe(0);
  expect(sample(body, "smithers_task_attempt_duration_seconds_count", { workflow: "deploy", outcome: "abandoned" })).toBeUndefined();
  expect(sample(body, "smithers_retries_total")).toBe(1);
  expect(sample(body, "smithers_runs_ended_total", { status: "waiting-approval" })).toBe(1);
  expect(sample(body, "smithers_runs", { status: "running" })).toBe(1);
  // No agent reported usage: no token or cost series.
  expect(body).not.toContain("smithers_agent_tokens_total{");
});

test("an attempt whose row cannot be read is counted without a workflow; a closed database fails the scrape, never observe", async () => {
  const db = await dbWithRun();
  const metrics = await createMetrics(db);
  metrics.observe({ type: "NodeFinished", ...at, nodeId: "gone", attempt: 1, durationMs: 5 });
  expect(sample((await metrics.scrape()).body, "smithers_task_attempts_total", { workflow: "", outcome: "finished" })).toBe(1);
  await db.close();
  expect(() => metrics.observe({ type: "NodeFinished", ...at, attempt: 4, durationMs: 5 })).not.toThrow();
  const scraped = await metrics.scrape().then(
    () => "answered",
    () => "refused",
  );
  expect(scraped).toBe("refused");
});

test("the limit gauges give each key's slots held and waited for (of runs that count), its declared concurrency and its last minute", async () => {
  const db = openSmithersDb(tempDbPath());
  opened.push(db);
  const nowMs = Date.now();
  await runs.insertRun(db, { runId: "r1", workflowName: "w", status: "running", createdAtMs: 1, runtimeOwnerId: "o1" });
  await runs.insertRun(db, { runId: "r2", workflowName: "w", status: "waiting-slot", createdAtMs: 1, runtimeOwnerId: "o2" });
  // A run taken over by another owner: its old slot does not count.
  await runs.insertRun(db, { runId: "r3", workflowName: "w", status: "running", createdAtMs: 1, runtimeOwnerId: "new-owner" });
  await db.withTransaction("seed", async (q) => {
    await limits.declare(q, "anthropic", { concurrency: 2, perMinute: 50 }, nowMs);
    expect(
      await limits.claim(q, {
        runId: "r1",
        nodeId: "a",
        iteration: 0,
        key: "anthropic",
        limit: { concurrency: 2, perMinute: 50 },
        attempt: 1,
        ownerId: "o1",
        nowMs,
      }),
    ).toEqual({ ok: true });
    await limits.wait(q, { runId: "r2", nodeId: "b", iteration: 0 }, "anthropic", "o2", nowMs);
    await limits.wait(q, { runId: "r3", nodeId: "c", iteration: 0 }, "anthropic", "dead-owner", nowMs);
  });
  await db.write("stale slot", (q) => q.run("UPDATE _smithers_slots SET state = 'held' WHERE run_id = 'r3'"));
  const body = (await (await createMetrics(db)).scrape()).body;
  expect(sample(body, "smithers_limit_slots_in_use", { key: "anthropic" })).toBe(1);
  expect(sample(body, "smithers_limit_slots_waiting", { key: "anthropic" })).toBe(1);
  expect(sample(body, "smithers_limit_concurrency", { key: "anthropic" })).toBe(2);
  expect(sample(body, "smithers_limit_requests_last_minute", { key: "anthropic" })).toBe(1);
  expect(sample(body, "smithers_runs", { status: "waiting-slot" })).toBe(1);
});
