/** GET /metrics: the Prometheus text format, behind the bearer token, counting what runs did. */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { sample } from "../support/prom-text.ts";
import { post, serverPerTest } from "./helpers.ts";

const METRICS_FIXTURES = join(import.meta.dir, "..", "fixtures", "metrics");
const TOKEN = "metrics-test-token-0123456789";
const auth = { Authorization: `Bearer ${TOKEN}` };
const start = serverPerTest();

test("without the bearer token /metrics is 401 UNAUTHORIZED; with it, the text format", async () => {
  const { url } = await start({ token: TOKEN });
  const refused = await fetch(`${url}/metrics`);
  expect(refused.status).toBe(401);
  expect(((await refused.json()) as { code: string }).code).toBe("UNAUTHORIZED");
  expect((await fetch(`${url}/metrics`, { headers: { Authorization: "Bearer wrong-token-0123456789" } })).status).toBe(401);
  const res = await fetch(`${url}/metrics`, { headers: auth });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toStartWith("text/plain; version=0.0.4");
  const body = await res.text();
  expect(body).toContain("# TYPE smithers_task_attempts_total counter");
  expect(body).toContain("# TYPE smithers_task_attempt_duration_seconds histogram");
  expect(sample(body, "smithers_runs", { status: "running" })).toBe(0);
  expect(sample(body, "smithers_queue_depth")).toBe(0);
  expect(sample(body, "smithers_runs_started_total")).toBe(0);
});

test("a run's attempts, retry, tokens, cost and end are counted; runs per status are read from the database", async () => {
  const { url } = await start({ token: TOKEN, workflowsDir: METRICS_FIXTURES });
  const created = await post(`${url}/runs`, { workflow: "metered", runId: "m-1" }, auth);
  expect(created.status).toBe(202);
  const waitFinished = async () => {
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      const res = await fetch(`${url}/runs/m-1`, { headers: auth });
      if (res.ok && ((await res.json()) as { status: string }).status === "finished") return;
      await Bun.sleep(25);
    }
    throw new Error("run m-1 did not finish");
  };
  await waitFinished();
  // The run's last events may still be on their way to the observer after the status is stored.
  let body = "";
  for (let i = 0; i < 100; i++) {
    body = await (await fetch(`${url}/metrics`, { headers: auth })).text();
    if (sample(body, "smithers_runs_ended_total", { status: "finished" }) === 1) break;
    await Bun.sleep(20);
  }
  expect(sample(body, "smithers_runs_started_total")).toBe(1);
  expect(sample(body, "smithers_runs_ended_total", { status: "finished" })).toBe(1);
  expect(sample(body, "smithers_task_attempts_total", { workflow: "metered", outcome: "finished" })).toBe(2);
  expect(sample(body, "smithers_task_attempts_total", { workflow: "metered", outcome: "failed" })).toBe(1);
  expect(sample(body, "smithers_task_attempt_duration_seconds_count", { workflow: "metered", outcome: "finished" })).toBe(2);
  expect(sample(body, "smithers_retries_total")).toBe(1);
  expect(sample(body, "smithers_agent_tokens_total", { model: "metered-1", type: "input" })).toBe(100);
  expect(sample(body, "smithers_agent_tokens_total", { model: "metered-1", type: "cached_input" })).toBe(30);
  expect(sample(body, "smithers_agent_tokens_total", { model: "metered-1", type: "output" })).toBe(20);
  expect(sample(body, "smithers_agent_cost_usd_total", { model: "metered-1" })).toBeCloseTo(0.01, 10);
  // Ended runs are counted as they end (above), not by the gauge of runs not ended.
  expect(sample(body, "smithers_runs", { status: "running" })).toBe(0);
  expect(sample(body, "smithers_runs", { status: "finished" })).toBeUndefined();
});

test('queued runs a server does not execute (maxConcurrent 0) are the queue depth and smithers_runs{status="queued"}', async () => {
  const { url } = await start({ maxConcurrent: 0 });
  for (const runId of ["q-1", "q-2", "q-3"]) expect((await post(`${url}/runs`, { workflow: "steps", runId })).status).toBe(202);
  const body = await (await fetch(`${url}/metrics`)).text();
  expect(sample(body, "smithers_queue_depth")).toBe(3);
  expect(sample(body, "smithers_runs", { status: "queued" })).toBe(3);
});
