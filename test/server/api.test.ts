import { describe, expect, test } from "bun:test";
import { createServer } from "../../src/server/index.ts";
import { sql, tempDbPath, waitFor } from "../helpers.ts";
import { FIXTURES, post, serverPerTest, waitForStatus } from "./helpers.ts";

const serve = serverPerTest();

describe("smithers serve API", () => {
  test("POST /runs answers 202 queued with the request already written to _smithers_queue", async () => {
    const { url, dbPath } = await serve({ maxConcurrent: 0 }); // nothing executes: the request must sit in the queue
    const res = await post(`${url}/runs`, { workflow: "steps", input: { delayMs: 0 }, runId: "r1" });
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ runId: "r1", status: "queued" });
    expect(sql(dbPath, "SELECT run_id, workflow_name, input_json FROM _smithers_queue")).toEqual([
      { run_id: "r1", workflow_name: "steps", input_json: '{"delayMs":0}' },
    ]);
    expect(((await (await fetch(`${url}/runs/r1`)).json()) as { status: string }).status).toBe("queued");
  });

  test("a started run finishes, is listed, and GET /runs/:id shows its nodes", async () => {
    const { url, dbPath } = await serve();
    await post(`${url}/runs`, { workflow: "steps", runId: "r2" });
    expect(await waitForStatus(url, "r2", ["finished", "failed"])).toBe("finished");
    const report = (await (await fetch(`${url}/runs/r2`)).json()) as { nodes: unknown[]; workflow?: string };
    expect(report.nodes).toHaveLength(6);
    const list = (await (await fetch(`${url}/runs?status=finished`)).json()) as { runs: { runId: string }[] };
    expect(list.runs.map((r) => r.runId)).toEqual(["r2"]);
    expect(sql(dbPath, "SELECT count(*) AS n FROM _smithers_queue")).toEqual([{ n: 0 }]);
  });

  test("errors are JSON { code, message } with the status of their code", async () => {
    const { url } = await serve();
    const unknownRun = await fetch(`${url}/runs/nope`);
    expect(unknownRun.status).toBe(404);
    expect(((await unknownRun.json()) as { code: string }).code).toBe("RUN_NOT_FOUND");
    expect((await fetch(`${url}/runs/nope/events`)).status).toBe(404);
    const badBody = await post(`${url}/runs`, { workflow: "steps", extra: 1 });
    expect([badBody.status, ((await badBody.json()) as { code: string }).code]).toEqual([400, "INVALID_INPUT"]);
    const badInput = await post(`${url}/runs`, { workflow: "steps", input: { delayMs: "slow" } });
    expect([badInput.status, ((await badInput.json()) as { code: string }).code]).toEqual([400, "INVALID_INPUT"]);
    const unknownWorkflow = await post(`${url}/runs`, { workflow: "missing" });
    expect(unknownWorkflow.status).toBe(404);
    await post(`${url}/runs`, { workflow: "steps", runId: "dup" });
    const dup = await post(`${url}/runs`, { workflow: "steps", runId: "dup" });
    expect([dup.status, ((await dup.json()) as { code: string }).code]).toEqual([409, "RUN_EXISTS"]);
  });

  test("with a token every request needs Authorization: Bearer <token>", async () => {
    const { url } = await serve({ token: "s3cret-long-enough-token" });
    const denied = await fetch(`${url}/runs`);
    expect([denied.status, ((await denied.json()) as { code: string }).code]).toEqual([401, "UNAUTHORIZED"]);
    expect((await fetch(`${url}/runs`, { headers: { Authorization: "Bearer wrong" } })).status).toBe(401);
    expect((await fetch(`${url}/runs`, { headers: { Authorization: "Bearer s3cret-long-enough-token" } })).status).toBe(200);
  });

  test("a lease for the server's own worker with no worker (maxConcurrent 0) is INVALID_OPTION", async () => {
    const error = await createServer({ dbPath: tempDbPath(), workflowsDir: FIXTURES, maxConcurrent: 0, leaseMs: 5_000 }).catch((e: { code?: string }) => e);
    expect((error as { code?: string }).code).toBe("INVALID_OPTION");
  });

  test("without a token the server refuses a non-loopback host", async () => {
    const server = await createServer({ dbPath: tempDbPath(), workflowsDir: FIXTURES });
    const error = await server.start({ port: 0, host: "0.0.0.0" }).catch((e: { code?: string }) => e);
    expect((error as { code?: string }).code).toBe("USAGE");
    await server.stop();
  });

  test("a run waiting at an approval is approved over HTTP; the server wakes it and it finishes", async () => {
    const { url, dbPath } = await serve();
    await post(`${url}/runs`, { workflow: "gate", runId: "g1" });
    expect(await waitForStatus(url, "g1", ["waiting-approval", "failed"])).toBe("waiting-approval");
    const decided = await post(`${url}/runs/g1/approve`, { by: "ops" });
    expect(decided.status).toBe(200);
    expect(((await decided.json()) as { approved: boolean }).approved).toBe(true);
    const again = await post(`${url}/runs/g1/approve`, {});
    expect(again.status).toBeGreaterThanOrEqual(400);
    expect(await waitForStatus(url, "g1", ["finished", "failed"])).toBe("finished");
    // A resume queued for the finished run changes nothing and leaves no request behind.
    expect((await post(`${url}/runs/g1/resume`, {})).status).toBe(202);
    await waitFor(() => sql<{ n: number }>(dbPath, "SELECT count(*) AS n FROM _smithers_queue")[0]?.n === 0, 5_000);
    expect(await waitForStatus(url, "g1", ["finished", "failed"])).toBe("finished");
  });

  test("a signal to an unknown run is 404; a human answer to an unknown request is 404", async () => {
    const { url } = await serve();
    expect((await post(`${url}/runs/nope/signals`, { name: "go", data: {} })).status).toBe(404);
    expect((await post(`${url}/human/nope:a:0:0/answer`, { data: {} })).status).toBe(404);
  });
});

describe("POST /runs/:id/cancel", () => {
  test("a request still queued is dropped: 200 cancelled, and the run is then unknown", async () => {
    const { url, dbPath } = await serve({ maxConcurrent: 0 });
    await post(`${url}/runs`, { workflow: "steps", runId: "q" });
    const res = await post(`${url}/runs/q/cancel`, {});
    expect([res.status, await res.json()]).toEqual([200, { runId: "q", status: "cancelled" }]);
    expect((await fetch(`${url}/runs/q`)).status).toBe(404);
    expect(sql(dbPath, "SELECT count(*) AS n FROM _smithers_queue")).toEqual([{ n: 0 }]);
  });

  test("a waiting run is cancelled at once; cancelling it again is 409 RUN_ENDED", async () => {
    const { url } = await serve();
    await post(`${url}/runs`, { workflow: "gate", runId: "w" });
    await waitForStatus(url, "w", ["waiting-approval"]);
    const res = await post(`${url}/runs/w/cancel`, {});
    expect([res.status, ((await res.json()) as { status: string }).status]).toEqual([200, "cancelled"]);
    const again = await post(`${url}/runs/w/cancel`, {});
    expect([again.status, ((await again.json()) as { code: string }).code]).toEqual([409, "RUN_ENDED"]);
  });

  test("a running run is asked to stop (202) and ends cancelled", async () => {
    const { url } = await serve();
    await post(`${url}/runs`, { workflow: "steps", input: { delayMs: 400 }, runId: "slow" });
    await waitForStatus(url, "slow", ["running"]);
    const res = await post(`${url}/runs/slow/cancel`, {});
    expect([res.status, ((await res.json()) as { status: string }).status]).toEqual([202, "cancel-requested"]);
    expect(await waitForStatus(url, "slow", ["cancelled", "finished", "failed"], 15_000)).toBe("cancelled");
  }, 20_000);
});
